import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import type { Activities } from '../activities/index.js';
import { type Config, QUEUED_ROUTE_CLASSES, type QueuedRouteClass } from '../schemas/config.js';
import { classTaskQueue } from '../schemas/sync.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

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
  /** A pre-built bundle (tests build it once); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkflowBundle;
  /** How long SIGTERM waits for running activities (each finishes its page) before cancelling them. */
  shutdownGraceTime?: string;
}

export interface RunningWorkers {
  /** Resolves when every worker has stopped. */
  readonly done: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * The activities that make requests of each route class. One activity makes one request (a page), so the
 * server's dispatch rate on the class's task queue is the fleet's request rate for that class.
 */
function classActivities(activities: Activities): Record<QueuedRouteClass, Partial<Activities>> {
  return {
    list: { syncTicketsPage: activities.syncTicketsPage, syncReferencePage: activities.syncReferencePage },
    directory: { syncReferencePage: activities.syncReferencePage },
    detail: { syncThreadPage: activities.syncThreadPage },
    analytics: {
      syncExportPage: activities.syncExportPage,
      syncReportSnapshot: activities.syncReportSnapshot,
      reconcile: activities.reconcile,
    },
  };
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
  const perClass = classActivities(options.activities);
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
    async shutdown() {
      for (const worker of workers) {
        if (worker.getState() === 'RUNNING') worker.shutdown();
      }
      await done;
    },
  };
}

/**
 * Dispatch rates per class from the configuration: at most `limit` requests in any window of the API's,
 * for the whole fleet. Temporal's task-queue rate limiter is a token bucket whose burst, after the queue
 * idled, is about one second of its rate plus one task (measured on the dev server 1.29: one extra task
 * below 1/s, `ceil(rate) + 1` above), so the first window after an idle spell can carry that many more
 * than `rate × window`. The rate leaves room for that burst — `rate × window + burst ≤ limit` — and for
 * `SUPPORT_API_RATE_SHARE` of headroom. At the spec's one-minute windows that is 58 list, 117 detail and 9
 * analytics requests a minute; in windows compressed to a few seconds the burst costs far more.
 */
export function dispatchRate(limit: number, windowMs: number, share: number): number {
  const windowS = windowMs / 1000;
  const burst = (rate: number) => (rate < 1 ? 1 : Math.ceil(rate) + 1);
  let rate = (limit * share) / windowS;
  for (let i = 0; i < 20; i++) rate = Math.max(0, Math.min(limit * share, limit - burst(rate)) / windowS);
  // A limit too small for any burst still gets a trickle rather than nothing.
  return rate > 0 ? rate : limit / windowS / 2;
}

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

/** The workers of this process for the configured task queue, with the activities of `deps`. */
export function startLocalWorkers(
  connection: { connection: NativeConnection; namespace: string },
  config: Config,
  activities: Activities,
): Promise<RunningWorkers> {
  return startWorkers({
    connection: connection.connection,
    namespace: connection.namespace,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities,
    classRates: classRatesOf(config),
  });
}
