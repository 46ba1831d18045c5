import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Destination } from '../../connectors/destination.js';
import { SupportApiClient } from '../../connectors/support-api/index.js';
import { DATA_DIR } from '../../embedded/data-dir.js';
import type { EmbeddedPostgres } from '../../embedded/postgres.js';
import { createStepReporter } from '../../embedded/step-progress.js';
import { embeddedWarehouse } from '../../embedded/warehouse.js';
import { type ForecastMode, makeForecast } from '../../forecast/forecast.js';
import { saveForecast } from '../../forecast/store.js';
import { forecastReadsOf } from '../../forecast/warehouse-reads.js';
import { ALL_STREAMS, type StreamName } from '../../schemas/streams.js';
import { clientBoundsOf, destinationFromConfig } from '../../worker/compose.js';
import { createLogger } from '../../worker/logger.js';
import { forecastLines } from '../display/forecast.js';
import { reportFailure, withConfig } from './context.js';

export interface PlanOptions {
  config?: string;
  streams?: StreamName[];
  fullRefresh?: boolean;
  backfill?: boolean;
  from?: string;
  to?: string;
  force?: boolean;
  json?: boolean;
  save: boolean;
}

/** The run a `plan` invocation forecasts, or the usage problem with its flags. */
function runOf(opts: PlanOptions): { mode: ForecastMode; range?: { from: string; before: string } } | string {
  if (opts.fullRefresh && opts.backfill) return '--full-refresh and --backfill exclude each other';
  if (!opts.backfill) {
    if (opts.from || opts.to || opts.force) return '--from, --to and --force go with --backfill';
    return { mode: opts.fullRefresh ? 'full_refresh' : 'incremental' };
  }
  if (!opts.from || !opts.to) return '--backfill needs --from and --to';
  if (Date.parse(opts.from) >= Date.parse(opts.to)) return '--from must be before --to';
  return { mode: 'backfill', range: { from: opts.from, before: opts.to } };
}

/**
 * `plan`: a dry run. Sweeps the ticket list once (list budget only), reads the warehouse's checkpoints
 * (read only: no table is created, nothing is written) and prints what `sync --once` (`--full-refresh`,
 * `backfill --from --to`) would request per route class, the windows, the binding class, the wall time at
 * the key's limits and the budget left to other clients; `--json` prints the forecast as one JSON object.
 * The forecast is kept in the data directory for the next run of the same kind, whose summary compares.
 */
export async function planCommand(opts: PlanOptions): Promise<number> {
  const run = runOf(opts);
  if (typeof run === 'string') {
    process.stderr.write(`usage error: ${run}\n`);
    return 2;
  }
  // As `status`: without DESTINATION_URL, the main job's embedded warehouse in .data/postgres, if any.
  const overrides: Record<string, string> = {};
  let embedded: EmbeddedPostgres | undefined;
  if (!process.env['DESTINATION_URL'] && existsSync(join(DATA_DIR, 'postgres', 'PG_VERSION'))) {
    embedded = await embeddedWarehouse(createLogger('warn'));
    overrides['DESTINATION_URL'] = embedded.url;
  }
  try {
    return await withConfig(
      opts,
      async (config, logger) => {
        const client = new SupportApiClient({
          baseUrl: config.SUPPORT_API_URL,
          apiKey: config.SUPPORT_API_KEY,
          logger,
          ...clientBoundsOf(config),
        });
        let destination: Destination | undefined;
        try {
          destination = await destinationFromConfig(config);
          const step = createStepReporter()('forecasting: one sweep of the ticket list (list budget only)');
          const forecast = await makeForecast({
            config,
            client,
            reads: await forecastReadsOf(destination),
            mode: run.mode,
            streams: opts.streams ?? [...ALL_STREAMS],
            ...(run.range ? { range: run.range } : {}),
            ...(opts.force ? { force: true } : {}),
            now: new Date(),
            onSweepPage: (pages, tickets) => step.update(`${pages} pages, ${tickets} tickets`),
          }).catch((err: unknown) => {
            step.fail(err instanceof Error ? err.message : String(err));
            throw err;
          });
          step.end(`${forecast.cost.list} pages, ${forecast.tickets.listed} tickets`);
          if (opts.save) {
            const path = saveForecast(DATA_DIR, forecast);
            process.stderr.write(
              `forecast kept in ${path}: the next run of this kind compares its figures with it (summary: "forecast")\n`,
            );
          }
          process.stdout.write(
            opts.json ? `${JSON.stringify(forecast)}\n` : `${forecastLines(forecast).join('\n')}\n`,
          );
          return 0;
        } catch (err) {
          return reportFailure(err);
        } finally {
          await Promise.allSettled([client.close(), destination?.close()]);
        }
      },
      overrides,
    );
  } finally {
    await embedded?.stop();
  }
}
