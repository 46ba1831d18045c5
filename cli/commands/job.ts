import type { Logger } from 'pino';
import { terminalLines } from '../../connectors/support-api/index.js';
import { DATA_DIR } from '../../embedded/data-dir.js';
import { asStep, type StepStarter } from '../../embedded/step-progress.js';
import type { TemporalTarget } from '../../embedded/temporal.js';
import { compareWithRun, takeForecast } from '../../forecast/store.js';
import { targetOf } from '../../forecast/target.js';
import type { Config } from '../../schemas/config.js';
import type { SyncMode, SyncRunInput } from '../../schemas/run-input.js';
import type { RunProgress } from '../../schemas/run-summary.js';
import { Secrets, secretsOf } from '../../schemas/secret.js';
import type { StreamName } from '../../schemas/streams.js';
import { buildDependencies } from '../../worker/compose.js';
import { settingsFromConfig } from '../../worker/config.js';
import {
  type MetricsAddress,
  type MetricsEndpoint,
  openMetricsEndpoint,
  type Readiness,
  STARTING,
} from '../../worker/metrics-endpoint.js';
import { findRunningRun, followRun, newRunId, type RunSummary, runSync } from '../../worker/run-sync.js';
import { startLocalWorkers } from '../../worker/workers.js';
import { failedWindowLines, uncoveredFailures } from '../display/failed-windows.js';
import { createProgressRenderer, summaryTable } from '../display/run-progress.js';
import { verdictLines } from '../preflight/verdicts.js';
import { PreflightError, preflight } from './preflight.js';

export interface JobOptions {
  config: Config;
  temporal: TemporalTarget;
  logger: Logger;
  mode: SyncMode;
  streams: StreamName[];
  range?: { from: string; before: string };
  /** A backfill re-reads windows an earlier backfill completed, too. */
  force?: boolean;
  /** Run a worker in this process (default); false when a worker fleet serves the task queue. */
  localWorker: boolean;
  /** Live progress on stderr. */
  display: boolean;
  /** Stop waiting (Ctrl-C): the run stays in Temporal and resumes with the next worker. */
  signal?: AbortSignal;
  /** Continue a run that an interrupted earlier process left running, instead of starting a new one. */
  resumeInterrupted?: boolean;
  /** Progress of the slow start-up steps (the local worker: from source, it bundles the workflows). */
  step?: StepStarter;
  /** The `--config` file printed commands need to reach this deployment (`npm start`'s demo). */
  configFile?: string;
  /** Serve the Prometheus metrics of this process (its worker's activities) here while the run goes. */
  metricsPort?: MetricsAddress;
  /** Scrubbed from what the run's summary table shows (default: the configuration's secrets). */
  secrets?: Secrets;
}

/**
 * One complete sync run: check the source, prepare the destination, (start an in-process worker,) run the
 * sync workflow with a live display, and return its summary. Nothing is started when the preflight fails.
 */
export async function runJob(options: JobOptions): Promise<RunSummary> {
  const { config, temporal, logger } = options;
  const deps = await buildDependencies(config, logger, { metrics: options.metricsPort !== undefined });
  let endpoint: MetricsEndpoint | undefined;
  let readiness: Readiness = STARTING;
  try {
    endpoint = await openMetricsEndpoint(
      deps.metrics,
      options.metricsPort,
      config.METRICS_HOST,
      logger,
      () => readiness,
    );
    if (endpoint) process.stderr.write(`metrics:     ${endpoint.url}\n`);
    const checked = preflight(deps, logger, config, options.streams).catch((err: unknown) => {
      // Which streams the key may not read, one line each, above the error.
      if (err instanceof PreflightError && err.verdicts && options.display)
        process.stderr.write(`${verdictLines(err.verdicts).join('\n')}\n`);
      throw err;
    });
    // The local worker starts while the preflight runs (loading the workflows and creating the workers is
    // most of a short run's start-up); it makes its build current only once the preflight passed, and stops
    // when it fails, before any run starts.
    const starting = options.localWorker
      ? asStep(options.step, 'starting the local worker', () =>
          startLocalWorkers(
            temporal,
            config,
            deps,
            logger,
            options.secrets,
            checked.catch(() => {
              throw new Error('stopped: the preflight failed');
            }),
          ),
        )
      : undefined;
    // A failed preflight is reported at once, not after the workflows are bundled: the start stops its
    // workers on its own.
    starting?.catch(() => undefined);
    await checked;
    const workers = await starting;
    const taskQueue = config.TEMPORAL_TASK_QUEUE;
    if (workers) readiness = workers.readiness;
    try {
      const now = new Date();
      const input: SyncRunInput = {
        runId: newRunId(now),
        mode: options.mode,
        streams: options.streams,
        settings: settingsFromConfig(config, now),
        ...(options.range ? { range: options.range } : {}),
        ...(options.force ? { force: true } : {}),
      };
      const render = createProgressRenderer();
      const onProgress = (progress: RunProgress) => {
        if (options.display) render(progress, deps.client.rateStats());
      };
      // A run an earlier, interrupted process left going is continued rather than doubled.
      const interrupted = options.resumeInterrupted
        ? await findRunningRun(
            temporal.client,
            config.SYNC_WORKSPACES_FILE ? config.SYNC_WORKSPACE : undefined,
          )
        : null;
      if (interrupted)
        process.stderr.write(`continuing run ${interrupted.input.runId}, interrupted earlier\n`);
      const summary = interrupted
        ? await followRun(interrupted.handle, interrupted.input, onProgress, options.signal)
        : await runSync(temporal.client, taskQueue, input, onProgress, options.signal, config.SYNC_WORKSPACE);
      summary.requests = Object.fromEntries(
        deps.client
          .rateStats()
          .filter((r) => r.requests > 0)
          .map((r) => [
            r.routeClass,
            {
              requests: r.requests,
              rate_limited: r.rateLimited,
              waits: r.waits,
              wait_ms: Math.round(r.totalWaitMs),
            },
          ]),
      );
      // Counted by this process's client, like the requests: the local worker's pages.
      if (options.localWorker) summary.secrets_scrubbed = deps.client.echoedSecrets();
      // The forecast `plan` made for this run, if any, next to what the run did (requests are counted by
      // this process's client: only with the local worker).
      const forecast = options.localWorker
        ? takeForecast(DATA_DIR, {
            target: targetOf(config),
            mode: options.mode,
            streams: options.streams,
            range: options.range ?? null,
          })
        : null;
      if (forecast) {
        summary.forecast = compareWithRun(forecast, {
          requests: summary.requests,
          durationMs: summary.duration_ms,
        });
      }
      if (options.display)
        process.stderr.write(
          `${terminalLines(summaryTable(summary).split('\n'), options.secrets ?? new Secrets(secretsOf(config)))}\n`,
        );
      if (summary.status === 'failed') {
        // What on-call needs for each failed window: code, request id, the UI link, the replay command.
        const failures = uncoveredFailures(
          await deps.destination.bookkeeping.listRuns(10_000),
          config,
          options.configFile,
        ).filter((f) => summary.error?.includes(f.workflow_id));
        if (failures.length > 0) process.stderr.write(`${failedWindowLines(failures).join('\n')}\n`);
      }
      return summary;
    } finally {
      await workers?.shutdown();
    }
  } finally {
    await endpoint?.close();
    await deps.close();
  }
}
