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
import { childEnvironment } from '../embedded/child-env.js';
import type { StepStarter } from '../embedded/step-progress.js';
import { provisionVenv, type VenvTool } from './python-venv.js';

export const DBT_CORE_VERSION = '1.11.16';
export const DBT_POSTGRES_VERSION = '1.11.0';

const DBT: VenvTool = {
  name: 'dbt',
  folder: `dbt-${DBT_CORE_VERSION}-postgres-${DBT_POSTGRES_VERSION}`,
  // dbt-core's range.
  python: { min: [3, 10], max: [3, 13] },
  candidates: ['python3.12', 'python3.11', 'python3.13', 'python3.10', 'python3'],
  packages: [`dbt-core==${DBT_CORE_VERSION}`, `dbt-postgres==${DBT_POSTGRES_VERSION}`],
  executable: 'bin/dbt',
};

/** Installs dbt into the cache (idempotent). Returns the `dbt` executable. */
export function provisionDbt(
  log: (line: string) => void = () => undefined,
  step?: StepStarter,
): Promise<string> {
  return provisionVenv(DBT, log, step);
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
