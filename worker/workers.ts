import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import pino, { type Logger } from 'pino';
import { type Activities, activitiesByRouteClass } from '../activities/index.js';
import type { RateGovernor } from '../connectors/support-api/index.js';
import { type Config, QUEUED_ROUTE_CLASSES } from '../schemas/config.js';
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
   * The fleet budget: the governor whose queued classes take their requests from the key's budget
   * workflow, reached through this connection (null: no limits to keep, e.g. a source without limits).
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
 * and one worker per route class on `<queue>-<class>`, whose requests the key's budget workflow paces for
 * every process of the fleet together (worker/fleet-budget.ts). SIGINT/SIGTERM stop polling and let running
 * activities finish their page within the grace time.
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
        // Thread pages are many and small: enough slots that the budget, not this process, paces them.
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

/** How the configuration paces the queued route classes: the key's fleet budget, or nothing without limits. */
export function pacingOf(config: Config): Pick<WorkersOptions, 'fleetBudget'> {
  const settings = fleetBudgetOf(config);
  return { fleetBudget: settings ? { governor: governorOf(config), settings } : null };
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
