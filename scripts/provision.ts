/**
 * Provisions what the tests and the main job need on this machine, printing progress:
 * the temporal CLI (found, or built with Go into ~/.cache/support-sync) and the PostgreSQL binaries check.
 * Safe to run repeatedly: a warm cache makes it a no-op.
 */
import { locateTemporalCli } from '../worker/embedded/temporal-cli.js';

const log = (line: string) => process.stderr.write(`[provision] ${line}\n`);
const started = Date.now();
const cli = await locateTemporalCli({ log });
log(
  cli.kind === 'existing-path'
    ? `temporal CLI: ${cli.path} (${cli.source})`
    : 'temporal CLI: SDK download at first use',
);
log(`done in ${((Date.now() - started) / 1000).toFixed(1)}s`);
