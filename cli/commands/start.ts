import type { CompanionHandle } from '../../companion/index.js';
import { removeDemoConfig, writeDemoConfig } from '../../embedded/demo-config.js';
import { embeddedSource } from '../../embedded/demo-source.js';
import { asStep, createStepReporter } from '../../embedded/step-progress.js';
import { temporalFor } from '../../embedded/temporal.js';
import { type EmbeddedWarehouse, embeddedWarehouse } from '../../embedded/warehouse.js';
import type { StreamName } from '../../schemas/streams.js';
import { createLogger } from '../../worker/logger.js';
import type { MetricsAddress } from '../../worker/metrics-endpoint.js';
import { exitCodeOf } from '../../worker/run-sync.js';
import { biSummaryLines, EXAMPLE_REPORT_QUERIES } from '../display/bi-summary.js';
import { reportFailure, withConfig } from './context.js';
import { runJob } from './job.js';

interface StartOptions {
  once?: boolean;
  seed: number;
  tickets: number;
  rateLimitWindow: number;
  config?: string;
  streams?: StreamName[];
  metricsPort?: MetricsAddress;
}

/**
 * `npm start`: the main job. Whatever is configured is used; whatever is not gets an embedded default —
 * the seeded companion as the source, an embedded PostgreSQL kept in .data/postgres, a Temporal dev server
 * with its UI and history in .data/temporal.db — then one complete sync of every stream with a live
 * display and a summary, and the UI stays up until Ctrl-C (`--once` exits instead).
 */
export async function startCommand(opts: StartOptions): Promise<number> {
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const bootLogger = createLogger(process.env['LOG_LEVEL'] || 'warn');
  // The slow first-start steps say what they do and how far along they are (live line or plain lines).
  const step = createStepReporter();
  const cleanups: (() => Promise<void>)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => undefined);
    cleanups.length = 0;
  };
  let interrupted = false;
  const abort = new AbortController();
  const onSignal = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    abort.abort();
    say('\nstopping (Ctrl-C again to force)…');
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    // The live display is the main output; logs only for warnings unless asked.
    const overrides: Record<string, string> = process.env['LOG_LEVEL'] ? {} : { LOG_LEVEL: 'warn' };
    let source: CompanionHandle | undefined;
    if (!process.env['SUPPORT_API_URL']) {
      source = await asStep(step, `seeding the companion (${opts.tickets} tickets)`, () =>
        embeddedSource({
          seed: opts.seed,
          tickets: opts.tickets,
          rateLimitWindowMs: Math.round(opts.rateLimitWindow * 1000),
        }),
      );
      cleanups.push(() => source!.stop());
      overrides['SUPPORT_API_URL'] = source.baseUrl;
      overrides['SUPPORT_API_KEY'] = source.keys.admin;
      // The demo shows report snapshots too: the shipped example queries unless REPORT_QUERIES is set.
      if (!process.env['REPORT_QUERIES']) overrides['REPORT_QUERIES'] = EXAMPLE_REPORT_QUERIES;
      // The route classes' task queues follow the demo's compressed window (the spec's limits per window).
      if (!process.env['SUPPORT_API_RATE_WINDOW']) {
        overrides['SUPPORT_API_RATE_WINDOW'] = `PT${opts.rateLimitWindow}S`;
      }
      say(
        `source:      embedded companion (seed ${opts.seed}, ${opts.tickets} tickets, the spec's rate limits per ${opts.rateLimitWindow} s window) at ${source.baseUrl}`,
      );
    } else {
      say(`source:      ${process.env['SUPPORT_API_URL']}`);
    }
    let warehouse: EmbeddedWarehouse | undefined;
    if (!process.env['DESTINATION_URL']) {
      warehouse = await embeddedWarehouse(bootLogger, step);
      cleanups.push(() => warehouse!.stop());
      overrides['DESTINATION_URL'] = warehouse.url;
      say(
        `warehouse:   ${warehouse.displayUrl}  (schema "support", data in ${warehouse.dataDir}; password in ${warehouse.serviceFile})`,
      );
    } else {
      say('warehouse:   DESTINATION_URL');
    }

    return await withConfig(
      opts,
      async (config, logger, secrets) => {
        const temporal = await temporalFor(config, logger, {
          embedIfUnset: true,
          persistent: true,
          ui: true,
          step,
          secrets,
        });
        cleanups.push(() => temporal.close());
        say(`temporal:    ${temporal.address}${temporal.uiUrl ? `  UI: ${temporal.uiUrl}` : ''}`);
        // What a second terminal needs to reach this demo (replay, status), when anything was embedded.
        const demoConfig =
          Object.keys(overrides).some((k) => k !== 'LOG_LEVEL') || !process.env['TEMPORAL_ADDRESS']
            ? await writeDemoConfig({
                ...overrides,
                TEMPORAL_ADDRESS: temporal.address,
                ...(temporal.uiUrl ? { TEMPORAL_UI_URL: temporal.uiUrl } : {}),
              })
            : undefined;
        if (demoConfig) cleanups.push(removeDemoConfig);
        if (interrupted) return 130;
        const summary = await runJob({
          config,
          temporal,
          logger,
          mode: 'incremental',
          streams: opts.streams ?? config.SYNC_STREAMS,
          localWorker: true,
          display: true,
          signal: abort.signal,
          ...(opts.metricsPort ? { metricsPort: opts.metricsPort } : {}),
          resumeInterrupted: true,
          step,
          ...(demoConfig ? { configFile: demoConfig } : {}),
        });
        say(biSummaryLines(config, summary).join('\n'));
        if (opts.once || interrupted) return exitCodeOf(summary);
        say(
          `\nThe Temporal UI stays up${temporal.uiUrl ? ` at ${temporal.uiUrl}` : ''}; query the warehouse with ` +
            `${warehouse ? warehouse.psqlCommand : 'psql "$DESTINATION_URL"'} -c 'select count(*) from support.tickets'` +
            (demoConfig
              ? `; from another terminal: npm run status -- --config ${demoConfig} (replay a window: npm run cli -- replay <window-id> --wait --config ${demoConfig})`
              : '') +
            '. Ctrl-C to stop.',
        );
        await new Promise<void>((resolve) => {
          const check = setInterval(() => {
            if (interrupted) {
              clearInterval(check);
              resolve();
            }
          }, 200);
        });
        return exitCodeOf(summary);
      },
      overrides,
    );
  } catch (err) {
    return reportFailure(err);
  } finally {
    await cleanup();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
