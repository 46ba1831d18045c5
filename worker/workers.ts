import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import pino, { type Logger } from 'pino';
import { type Activities, activitiesByRouteClass } from '../activities/index.js';
import type { RateGovernor } from '../connectors/support-api/index.js';
import { type Config, QUEUED_ROUTE_CLASSES, type QueuedRouteClass } from '../schemas/config.js';
import type { FleetBudgetSettings } from '../schemas/fleet-budget.js';
import { classTaskQueue } from '../schemas/sync.js';
import { governorOf } from './compose.js';
import { attachFleetBudget, fleetBudgetOf } from './fleet-budget.js';
import type { Readiness } from './metrics-endpoint.js';

/**
 * The workflows' entry module, which the worker bundles at start: the TypeScript source when this runs from
 * source (tsx), the compiled JavaScript when it runs from `dist/` (npm run build; the worker image).
 */
export const WORKFLOWS_PATH = fileURLToPath(
  new URL(`../workflows/index${extname(fileURLToPath(import.meta.url))}`, import.meta.url),
);

export interface WorkersOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  activities: Activities;
  /**
   * Activities per second the Temporal server dispatches on each route class's task queue, for every
   * worker of the fleet together (null: no server-side pacing, e.g. a source without limits).
   */
  classRates: Record<QueuedRouteClass, number> | null;
  /**
   * The fleet budget (SUPPORT_API_BUDGET=windows): the governor whose queued classes take their requests
   * from the key's budget workflow, reached through this connection (null: off).
   */
  fleetBudget?: { governor: RateGovernor; settings: FleetBudgetSettings } | null;
  logger?: Logger;
  /** A pre-built bundle (tests build it once); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkflowBundle;
  /** How long SIGTERM waits for running activities (each finishes its page) before cancelling them. */
  shutdownGraceTime?: string;
}

export interface RunningWorkers {
  /** Resolves when every worker has stopped. */
  readonly done: Promise<void>;
  /** Ready while every worker is RUNNING: connected to Temporal and polling its task queue. */
  readonly readiness: Readiness;
  shutdown(): Promise<void>;
}

/**
 * The workers of one process: the main worker (workflows, and activities that only touch the destination)
 * and one worker per route class on `<queue>-<class>`, whose activity rate the Temporal server enforces for
 * every worker polling it (`maxTaskQueueActivitiesPerSecond`): the rate budget holds for the whole fleet,
 * however many processes run. SIGINT/SIGTERM stop polling and let running activities finish their page
 * within the grace time.
 */
export async function startWorkers(options: WorkersOptions): Promise<RunningWorkers> {
  const grace = (options.shutdownGraceTime ?? '30 seconds') as '30 seconds';
  if (options.fleetBudget)
    attachFleetBudget({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      governor: options.fleetBudget.governor,
      settings: options.fleetBudget.settings,
      logger: options.logger ?? pino({ level: 'silent' }),
    });
  const main = await Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : { workflowsPath: WORKFLOWS_PATH }),
    activities: options.activities,
    shutdownGraceTime: grace,
  });
  const perClass = activitiesByRouteClass(options.activities);
  const workers = [main];
  for (const routeClass of QUEUED_ROUTE_CLASSES) {
    workers.push(
      await Worker.create({
        connection: options.connection,
        namespace: options.namespace,
        taskQueue: classTaskQueue(options.taskQueue, routeClass),
        activities: perClass[routeClass],
        ...(options.classRates ? { maxTaskQueueActivitiesPerSecond: options.classRates[routeClass] } : {}),
        // Thread pages are many and small: enough slots that the server's rate, not this process, paces them.
        maxConcurrentActivityTaskExecutions: routeClass === 'detail' ? 64 : 16,
        shutdownGraceTime: grace,
      }),
    );
  }
  const done = Promise.all(workers.map((w) => w.run())).then(() => undefined);
  return {
    done,
    readiness: () => {
      const states = workers.map((w) => w.getState());
      const notRunning = states.filter((state) => state !== 'RUNNING');
      return notRunning.length === 0
        ? { ready: true, detail: `ready: ${workers.length} workers polling` }
        : { ready: false, detail: `not ready: workers ${[...new Set(notRunning)].join(', ')}` };
    },
    async shutdown() {
      for (const worker of workers) {
        if (worker.getState() === 'RUNNING') worker.shutdown();
      }
      await done;
    },
  };
}

/**
 * Temporal's task-queue limiter (server 1.29, service/matching matcher_data.go `simpleLimiter`) is a GCRA
 * with a fixed burst duration of one second: in any interval of length T it dispatches at most
 * `floor((T + 1 s) × rate) + 1` tasks — after an idle spell, a second's worth of rate at once.
 */
const TEMPORAL_BURST_S = 1;
/**
 * The API counts a request when it arrives, not when Temporal dispatched its activity: the time in between
 * (delivery of the task, the activity's checkpoint read, the rate governor) varies by a few hundred ms on a
 * loaded worker (measured: p90 0.16 s, max 0.5 s with three processes on two cores). Requests arriving in
 * one API window were therefore dispatched within `window + DISPATCH_JITTER_S`. What is left over — a late straggler,
 * a token the matcher hands back when a match fails — is caught by the governor's fleet reserve
 * (`FLEET_RESERVE`, compose.ts): no process sends the last request of a window.
 */
const DISPATCH_JITTER_S = 0.25;

/**
 * Dispatch rates per class from the configuration: at most `limit` requests in any window of the API's,
 * for the whole fleet: `floor(rate × (window + burst + jitter)) + 1 ≤ floor(limit × share)`, i.e. the
 * rate just under `floor(limit × share) / (window + burst + jitter)`. At the spec's one-minute windows that
 * is 58.8 list, 117.6 detail and 9.8 analytics requests a minute; in windows compressed to a few seconds
 * the second of burst costs far more (tests and demos). (Before issue 22 the rate met
 * `rate × span + 1 ≤ limit`, a request a window short of the bound: 9 analytics requests a minute of 10.)
 */
export function dispatchRate(limit: number, windowMs: number, share: number): number {
  const span = windowMs / 1000 + TEMPORAL_BURST_S + DISPATCH_JITTER_S;
  const perWindow = Math.floor(limit * share + 1e-9);
  // Just under the bound, so that the floor above stays below `perWindow`.
  const rate = (perWindow - RATE_MARGIN) / span;
  // A limit too small for any burst (one request a window) still gets a trickle: a quarter of it, so that
  // the burst on top stays within the window.
  return perWindow > 1 ? rate : limit / (windowMs / 1000) / 4;
}

/** How far under the bound the dispatch rate stays (requests per span): float rounding, nothing more. */
const RATE_MARGIN = 0.01;

/** The dispatch rate of each route class's task queue (activities per second), or null when off. */
export function classRatesOf(config: Config): Record<QueuedRouteClass, number> | null {
  const limits = config.SUPPORT_API_RATE_LIMITS;
  if (!limits) return null;
  const share = config.SUPPORT_API_RATE_SHARE;
  const rates = Object.fromEntries(
    QUEUED_ROUTE_CLASSES.map((c) => [c, dispatchRate(limits[c], config.SUPPORT_API_RATE_WINDOW, share)]),
  ) as Record<QueuedRouteClass, number>;
  if (config.ANALYTICS_REQUESTS_PER_MINUTE !== undefined)
    rates.analytics = dispatchRate(config.ANALYTICS_REQUESTS_PER_MINUTE, 60_000, share);
  return rates;
}

/**
 * How the configuration paces the queued route classes: the key's fleet budget (SUPPORT_API_BUDGET=windows,
 * the default; the class queues then dispatch unpaced) or the task queues' dispatch rates (`queue`).
 */
export function pacingOf(config: Config): Pick<WorkersOptions, 'classRates' | 'fleetBudget'> {
  const settings = fleetBudgetOf(config);
  if (!settings) return { classRates: classRatesOf(config), fleetBudget: null };
  return { classRates: null, fleetBudget: { governor: governorOf(config), settings } };
}

/** The workers of this process for the configured task queue, with the activities of `deps`. */
export function startLocalWorkers(
  connection: { connection: NativeConnection; namespace: string },
  config: Config,
  activities: Activities,
  logger?: Logger,
): Promise<RunningWorkers> {
  return startWorkers({
    connection: connection.connection,
    namespace: connection.namespace,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities,
    ...pacingOf(config),
    ...(logger ? { logger } : {}),
  });
}
