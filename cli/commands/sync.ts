import { terminalJson } from '../../connectors/support-api/index.js';
import type { SyncMode } from '../../schemas/run-input.js';
import type { StreamName } from '../../schemas/streams.js';
import type { MetricsAddress } from '../../worker/metrics-endpoint.js';
import { exitCodeOf } from '../../worker/run-sync.js';
import { reportFailure, withTemporal } from './context.js';
import { runJob } from './job.js';
import { PreflightError } from './preflight.js';

interface SyncOptions {
  config?: string;
  streams?: StreamName[];
  fullRefresh?: boolean;
  localWorker: boolean;
  metricsPort?: MetricsAddress;
}

/**
 * `sync --once`: one complete sync against the configured API and destination. Temporal: TEMPORAL_ADDRESS,
 * or an in-memory dev server when it is not set. The JSON summary is the last stdout line.
 */
export function syncCommand(opts: SyncOptions): Promise<number> {
  return runOnce(opts, opts.fullRefresh ? 'full_refresh' : 'incremental');
}

export function backfillCommand(
  opts: SyncOptions & { from: string; to: string; force?: boolean },
): Promise<number> {
  if (Date.parse(opts.from) >= Date.parse(opts.to)) {
    process.stderr.write('usage error: --from must be before --to\n');
    return Promise.resolve(2);
  }
  return runOnce(opts, 'backfill', { from: opts.from, before: opts.to }, opts.force === true);
}

function runOnce(
  opts: SyncOptions,
  mode: SyncMode,
  range?: { from: string; before: string },
  force = false,
): Promise<number> {
  return withTemporal(opts, { embedIfUnset: true }, async ({ config, logger, temporal, secrets }) => {
    try {
      const summary = await runJob({
        config,
        temporal,
        logger,
        mode,
        streams: opts.streams ?? config.SYNC_STREAMS,
        ...(range ? { range } : {}),
        ...(force ? { force } : {}),
        localWorker: opts.localWorker,
        display: true,
        secrets,
        ...(opts.metricsPort ? { metricsPort: opts.metricsPort } : {}),
      });
      process.stdout.write(`${terminalJson(summary, secrets)}\n`);
      return exitCodeOf(summary);
    } catch (err) {
      if (err instanceof PreflightError) {
        const preflight = err.verdicts ? { preflight: err.verdicts } : {};
        process.stdout.write(
          `${terminalJson({ status: 'failed', error: err.message, ...preflight }, secrets)}\n`,
        );
      }
      return reportFailure(err);
    }
  });
}
