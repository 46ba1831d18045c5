/**
 * Provisions what the tests and the main job need on this machine, printing progress:
 *  - the temporal CLI (found, or built with Go into ~/.cache/support-sync; the SDK downloads it where Go is
 *    missing and there is internet);
 *  - the BigQuery emulator (bqemulator from PyPI in a virtualenv under ~/.cache/support-sync), for the
 *    BigQuery destination tests;
 *  - dbt (dbt-core and dbt-postgres from PyPI, pinned, in a virtualenv under ~/.cache/support-sync), for
 *    the test of the dbt package (scripts/dbt.ts).
 * Safe to run repeatedly: a warm cache makes it a no-op. Runs before `npm test` (pretest), so that test
 * files never race each other to install a tool.
 */

import { createStepReporter } from '../embedded/step-progress.js';
import { locateTemporalCli } from '../embedded/temporal-cli.js';
import { provisionBigQueryEmulator } from './bigquery-emulator.js';
import { provisionDbt } from './dbt.js';

const log = (line: string) => process.stderr.write(`[provision] ${line}\n`);
// Live lines on a terminal, a plain line at least every 10 s otherwise (CI logs).
const step = createStepReporter();
const started = Date.now();
const cli = await locateTemporalCli({ log, step });
log(
  cli.kind === 'existing-path'
    ? `temporal CLI: ${cli.path} (${cli.source})`
    : 'temporal CLI: SDK download at first use',
);
const python = await provisionBigQueryEmulator(log, step);
log(`BigQuery emulator: ${python}`);
log(`dbt: ${await provisionDbt(log, step)}`);
log(`done in ${((Date.now() - started) / 1000).toFixed(1)}s`);
