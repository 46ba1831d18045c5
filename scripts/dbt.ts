/**
 * dbt for the test of the dbt package (dbt/, test/destinations/dbt-union.test.ts): the PyPI packages
 * `dbt-core` and `dbt-postgres`, pinned, in a virtualenv of their own.
 *
 * Provisioning (once per machine, cached in ~/.cache/support-sync/dbt-<core>-postgres-<adapter>): a Python
 * 3.10–3.13 virtualenv (dbt-core's range) with the two pinned packages from PyPI, about 45 s on an empty pip
 * cache, nothing at all afterwards. dbt hub (hub.getdbt.com) is not needed: the package depends on no other
 * dbt package, so neither `dbt deps` of a local package nor a run reaches the network (anonymous usage
 * statistics and the version check are turned off in `dbtEnvironment`).
 *
 *   npx tsx scripts/dbt.ts            # provision, print the dbt executable
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { childEnvironment } from '../embedded/child-env.js';
import type { StepStarter } from '../embedded/step-progress.js';

const execFileAsync = promisify(execFile);

export const DBT_CORE_VERSION = '1.11.16';
export const DBT_POSTGRES_VERSION = '1.11.0';
const PYTHON_CANDIDATES = ['python3.12', 'python3.11', 'python3.13', 'python3.10', 'python3'];

function cacheDir(): string {
  return join(
    process.env['SUPPORT_SYNC_CACHE'] ?? join(homedir(), '.cache', 'support-sync'),
    `dbt-${DBT_CORE_VERSION}-postgres-${DBT_POSTGRES_VERSION}`,
  );
}

async function findPython(): Promise<string> {
  for (const candidate of PYTHON_CANDIDATES) {
    try {
      const { stdout } = await execFileAsync(
        candidate,
        ['-c', 'import sys; print(int((3, 10) <= sys.version_info[:2] <= (3, 13)))'],
        { env: childEnvironment() },
      );
      if (stdout.trim() === '1') return candidate;
    } catch {
      // not installed
    }
  }
  throw new Error(
    `dbt ${DBT_CORE_VERSION} needs Python 3.10–3.13 on PATH (tried ${PYTHON_CANDIDATES.join(', ')})`,
  );
}

/** Installs dbt into the cache (idempotent). Returns the `dbt` executable. */
export async function provisionDbt(
  log: (line: string) => void = () => undefined,
  step?: StepStarter,
): Promise<string> {
  const dir = cacheDir();
  const dbt = join(dir, 'venv', 'bin', 'dbt');
  const python = join(dir, 'venv', 'bin', 'python');
  const ready = join(dir, '.ready');
  if (existsSync(ready) && existsSync(dbt)) return dbt;
  const started = Date.now();
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const system = await findPython();
  log(`dbt ${DBT_CORE_VERSION}: creating a virtualenv with ${system} in ${dir}`);
  await execFileAsync(system, ['-m', 'venv', join(dir, 'venv')], { env: childEnvironment() });
  const installing = step?.(
    `installing dbt-core ${DBT_CORE_VERSION} and dbt-postgres ${DBT_POSTGRES_VERSION} from PyPI into ${dir} (first time)`,
  );
  try {
    await execFileAsync(
      python,
      [
        '-m',
        'pip',
        'install',
        '--quiet',
        '--disable-pip-version-check',
        `dbt-core==${DBT_CORE_VERSION}`,
        `dbt-postgres==${DBT_POSTGRES_VERSION}`,
      ],
      // pip's own settings (PIP_INDEX_URL, proxies) and the program basics, not the sync's keys.
      { maxBuffer: 64 * 1024 * 1024, env: childEnvironment() },
    );
  } catch (err) {
    installing?.fail((err as Error).message.split('\n')[0]!);
    throw err;
  }
  installing?.end();
  await writeFile(ready, `${new Date().toISOString()}\n`);
  log(`dbt: provisioned in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return dbt;
}

/**
 * The environment dbt runs with: the program basics (not the sync's keys), no anonymous usage statistics
 * (dbt would send them to its collector), no version check, no colours in the output a test reads.
 */
export function dbtEnvironment(extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return childEnvironment({
    DBT_SEND_ANONYMOUS_USAGE_STATS: 'false',
    DO_NOT_TRACK: '1',
    DBT_VERSION_CHECK: 'false',
    DBT_USE_COLORS: 'false',
    DBT_PRINTER_WIDTH: '120',
    ...extra,
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${await provisionDbt((l) => process.stderr.write(`[dbt] ${l}\n`))}\n`);
}
