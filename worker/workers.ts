import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import type { Activities } from '../activities/index.js';
import type { Config } from '../schemas/config.js';
import { analyticsQueueOf } from './config.js';

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface WorkersOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  analyticsTaskQueue: string;
  activities: Activities;
  /** The API's analytics limit; the server enforces it on the analytics queue for all workers together. */
  analyticsRequestsPerMinute: number;
  /** A pre-built bundle (tests build it once); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkflowBundle;
  /** How long SIGTERM waits for running activities (each finishes its page) before cancelling them. */
  shutdownGraceTime?: string;
}

export interface RunningWorkers {
  /** Resolves when both workers have stopped. */
  readonly done: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * The main worker (workflows + list/detail/write activities paced by the in-process governor) and the
 * analytics worker (only analytics-class activities, on a task queue whose rate Temporal enforces across
 * every worker: `maxTaskQueueActivitiesPerSecond`). SIGINT/SIGTERM stop polling and let running activities
 * finish their page within the grace time.
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
  const analytics = await Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.analyticsTaskQueue,
    activities: {
      syncExportPage: options.activities.syncExportPage,
      syncReportSnapshot: options.activities.syncReportSnapshot,
      reconcile: options.activities.reconcile,
    },
    maxTaskQueueActivitiesPerSecond: options.analyticsRequestsPerMinute / 60,
    shutdownGraceTime: grace,
  });
  const done = Promise.all([main.run(), analytics.run()]).then(() => undefined);
  return {
    done,
    async shutdown() {
      for (const worker of [main, analytics]) {
        if (worker.getState() === 'RUNNING') worker.shutdown();
      }
      await done;
    },
  };
}

/** The two workers of this process for the configured task queue, with the activities of `deps`. */
export function startLocalWorkers(
  connection: { connection: NativeConnection; namespace: string },
  config: Config,
  activities: Activities,
): Promise<RunningWorkers> {
  return startWorkers({
    connection: connection.connection,
    namespace: connection.namespace,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    analyticsTaskQueue: analyticsQueueOf(config.TEMPORAL_TASK_QUEUE),
    activities,
    analyticsRequestsPerMinute: config.ANALYTICS_REQUESTS_PER_MINUTE,
  });
}
