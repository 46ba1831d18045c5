import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { childEnvironment } from '../../embedded/child-env.js';
import { untrustedFolderProblem } from '../../embedded/private-folder.js';
import { startTemporalDevServer } from '../../embedded/temporal-server.js';

/** The demo's own files and children: binaries only from a folder it owns, children without the keys. */

const SECRETS = {
  SUPPORT_API_KEY: 'sk_live_child_env_secret',
  SYNC_HASH_KEY: 'hash_key_child_env_secret_0123456789',
  TEMPORAL_API_KEY: 'temporal_child_env_secret',
  DESTINATION_URL: 'postgres://u:child_env_password@db/x',
  POSTGRES_PASSWORD: 'child_env_password',
  GOOGLE_APPLICATION_CREDENTIALS: '/secrets/sa.json',
  SUPPORT_SYNC_SOME_TOKEN: 'child_env_token',
  GOPRIVATE_TOKEN: 'child_env_go_token',
  SUPPORT_SYNC_DB_PASS: 'child_env_db_pass',
};

describe('child environment', () => {
  it('keeps what programs need and none of the settings', () => {
    const env = childEnvironment(
      { BQEMU_ENABLE_FORMAT_EXTENSIONS: 'false' },
      {
        ...SECRETS,
        PATH: '/usr/bin',
        HOME: '/home/x',
        LC_ALL: 'C.UTF-8',
        GOFLAGS: '-mod=mod',
        SUPPORT_SYNC_DATA_DIR: '/var/tmp/s',
        SUPPORT_API_URL: 'https://support.example.com',
        SYNC_STREAMS: 'tickets',
      },
    );
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/x',
      LC_ALL: 'C.UTF-8',
      GOFLAGS: '-mod=mod',
      SUPPORT_SYNC_DATA_DIR: '/var/tmp/s',
      BQEMU_ENABLE_FORMAT_EXTENSIONS: 'false',
    });
  });

  it('a child started with it does not see the keys this process has', async () => {
    const before = { ...process.env };
    Object.assign(process.env, SECRETS);
    let childEnvText: string;
    try {
      const child = spawn(process.execPath, ['-e', 'process.stdout.write(JSON.stringify(process.env))'], {
        env: childEnvironment(),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      childEnvText = '';
      child.stdout.setEncoding('utf8').on('data', (c: string) => (childEnvText += c));
      await new Promise((resolve) => child.once('close', resolve));
    } finally {
      for (const name of Object.keys(SECRETS)) if (!(name in before)) delete process.env[name];
    }
    const childEnv = JSON.parse(childEnvText) as Record<string, string>;
    expect(childEnv['PATH']).toBe(process.env['PATH']);
    for (const [name, value] of Object.entries(SECRETS)) {
      expect(childEnv[name]).toBeUndefined();
      expect(childEnvText).not.toContain(value);
    }
  });
});

/** Environments (NUL-separated) of the processes whose parent is this one and whose command line has `marker`. */
async function childEnvironments(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8');
      if (parent === process.pid && cmdline.includes(marker))
        found.push(await readFile(`/proc/${pid}/environ`, 'utf8'));
    } catch {
      // the process ended while we read it
    }
  }
  return found;
}

describe('the Temporal dev server', () => {
  it.runIf(process.platform === 'linux')(
    'starts without the keys this process has, which stay set here',
    async () => {
      const before = { ...process.env };
      Object.assign(process.env, SECRETS);
      try {
        const server = await startTemporalDevServer();
        try {
          const environments = await childEnvironments('start-dev');
          expect(environments).toHaveLength(1);
          expect(environments[0]).toContain('PATH=');
          for (const value of Object.values(SECRETS)) expect(environments[0]).not.toContain(value);
          for (const [name, value] of Object.entries(SECRETS)) expect(process.env[name]).toBe(value);
        } finally {
          await server.teardown();
        }
      } finally {
        for (const name of Object.keys(SECRETS)) if (!(name in before)) delete process.env[name];
      }
    },
    120_000,
  );
});

describe('the binaries folder', () => {
  it('is trusted only as a real directory of this user that no one else can write', async () => {
    const base = await mkdtemp(join(tmpdir(), 'demo-folder-'));
    const ours = join(base, 'ours');
    await mkdir(ours);
    await chmod(ours, 0o755);
    expect(await untrustedFolderProblem(ours)).toBeNull();
    expect(await untrustedFolderProblem(join(base, 'absent'))).toBeNull();
    await chmod(ours, 0o777);
    expect(await untrustedFolderProblem(ours)).toMatch(/writable by its group or by others \(mode 777\)/);
    await chmod(ours, 0o775);
    expect(await untrustedFolderProblem(ours)).toMatch(/mode 775/);
    await chmod(ours, 0o755);
    const uid = process.getuid!();
    expect(await untrustedFolderProblem(ours, uid + 1)).toMatch(`owned by uid ${uid}, not by this user`);
    const link = join(base, 'link');
    await symlink(ours, link);
    expect(await untrustedFolderProblem(link)).toMatch(/symbolic link/);
  });
});
