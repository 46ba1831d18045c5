import { type NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import pino, { type Logger } from 'pino';
import { type Activities, activitiesByRouteClass } from '../activities/index.js';
import type { RateGovernor } from '../connectors/support-api/index.js';
import { type Config, QUEUED_ROUTE_CLASSES } from '../schemas/config.js';
import type { FleetBudgetSettings } from '../schemas/fleet-budget.js';
import type { Secrets } from '../schemas/secret.js';
import { classTaskQueue } from '../schemas/workflow-names.js';
import { buildDependencies, governorOf } from './compose.js';
import { workspaceConfigLoader } from './config.js';
import {
  defaultBuildId,
  deploymentNameOf,
  type Promotion,
  packageVersion,
  promoteVersion,
  type WorkerVersioning,
} from './deployment-version.js';
import { attachFleetBudget, fleetBudgetOf } from './fleet-budget.js';
import { workflowCacheSize } from './heap-cap.js';
import type { SyncMetrics } from './metrics.js';
import type { Readiness } from './metrics-endpoint.js';
import { loadWorkflows } from './workflow-bundle.js';
import { workspaceActivityInterceptors } from './workspace-context.js';
import { type WorkspaceDependencies, WorkspaceRouter } from './workspace-router.js';

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
  /** The workflows (worker/workflow-bundle.ts's loadWorkflows(); tests pass the run's bundle). */
  workflowBundle: WorkflowBundleOption;
  /**
   * Worker Deployment Versioning: every worker of the process declares this version, workflows are pinned
   * to it by default (fleetBudgetWorkflow moves at continue-as-new), and the version is made current as
   * `promotion` says once the workers poll. Absent: unversioned workers.
   */
  versioning?: WorkerVersioning;
  /** How long SIGTERM waits for running activities (each finishes its page) before cancelling them. */
  shutdownGraceTime?: string;
  /**
   * What the start waits for once the workers poll, before it makes the build current and returns (a
   * command's preflight, run meanwhile): when it fails, the workers stop and the start fails with its error.
   */
  proceedWhen?: Promise<unknown>;
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
  // Awaited once the workers poll; handled now, so that failing before then is not an unhandled rejection.
  options.proceedWhen?.catch(() => undefined);
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
  // The per-class workers join the same version: a pinned run's activities on `<queue>-<class>` go to
  // workers of its own build.
  const deployment = options.versioning
    ? ({
        workerDeploymentOptions: {
          version: options.versioning.version,
          useWorkerVersioning: true,
          defaultVersioningBehavior: 'PINNED',
        },
      } as const)
    : {};
  const cacheSize = workflowCacheSize();
  const main = await Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    workflowBundle: options.workflowBundle,
    activities: options.activities,
    interceptors: { activity: [workspaceActivityInterceptors] },
    shutdownGraceTime: grace,
    ...deployment,
    // The workflow cache sized for the workflow thread's capped heap, not the main thread's (heap-cap.ts).
    ...(cacheSize !== undefined ? { maxCachedWorkflows: cacheSize } : {}),
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
        interceptors: { activity: [workspaceActivityInterceptors] },
        // Thread pages are many and small: enough slots that the budget, not this process, paces them.
        maxConcurrentActivityTaskExecutions: routeClass === 'detail' ? 64 : 16,
        shutdownGraceTime: grace,
        ...deployment,
      }),
    );
  }
  const done = Promise.all(workers.map((w) => w.run())).then(() => undefined);
  const shutdown = async () => {
    for (const worker of workers) {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    }
    await done;
  };
  try {
    await options.proceedWhen;
  } catch (err) {
    await shutdown();
    throw err;
  }
  if (options.versioning) {
    try {
      await promoteVersion(
        options.connection.workflowService,
        options.namespace,
        options.versioning,
        options.logger ?? pino({ level: 'silent' }),
      );
    } catch (err) {
      await shutdown();
      throw err;
    }
  }
  return {
    done,
    readiness: () => {
      const states = workers.map((w) => w.getState());
      const notRunning = states.filter((state) => state !== 'RUNNING');
      return notRunning.length === 0
        ? { ready: true, detail: `ready: ${workers.length} workers polling` }
        : { ready: false, detail: `not ready: workers ${[...new Set(notRunning)].join(', ')}` };
    },
    shutdown,
  };
}

/** How the configuration paces the queued route classes: the key's fleet budget, or nothing without limits. */
export function pacingOf(config: Config): Pick<WorkersOptions, 'fleetBudget'> {
  const settings = fleetBudgetOf(config);
  return { fleetBudget: settings ? { governor: governorOf(config), settings } : null };
}

/**
 * This process's version in its Worker Deployment (null with TEMPORAL_WORKER_VERSIONING=false): the
 * deployment name, and the build id from TEMPORAL_BUILD_ID or the package version and the bundle's hash.
 */
export function versioningOf(
  config: Config,
  bundleHash: string,
  promotion: Promotion,
): WorkerVersioning | undefined {
  if (!config.TEMPORAL_WORKER_VERSIONING) return undefined;
  return {
    version: {
      deploymentName: deploymentNameOf(config),
      buildId: config.TEMPORAL_BUILD_ID ?? defaultBuildId(packageVersion(), bundleHash),
    },
    promotion,
  };
}

/** When this process's workers make their build current (TEMPORAL_SET_CURRENT_VERSION). */
export function promotionOf(config: Config): Promotion {
  return config.TEMPORAL_SET_CURRENT_VERSION ? 'when-new' : 'when-none';
}

/**
 * The workers of this process for the configured task queue, with the workflows of loadWorkflows() and the
 * configured version, serving every workspace: the configured one on `deps`, the others of
 * SYNC_WORKSPACES_FILE on dependencies of their own, built at their first activity
 * (worker/workspace-router.ts), each key under its own fleet budget; the process's metrics (`deps.metrics`)
 * watch every workspace's activities.
 */
export async function startLocalWorkers(
  connection: { connection: NativeConnection; namespace: string },
  config: Config,
  deps: WorkspaceDependencies & { metrics?: SyncMetrics | undefined },
  logger?: Logger,
  secrets?: Secrets,
  /** See WorkersOptions.proceedWhen. */
  proceedWhen?: Promise<unknown>,
): Promise<RunningWorkers> {
  proceedWhen?.catch(() => undefined);
  const router = routeWorkspaces({
    ...connection,
    config,
    deps,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(logger ? { logger } : {}),
    ...(secrets ? { secrets } : {}),
  });
  const activities = router.activities();
  const workflows = await loadWorkflows();
  const versioning = versioningOf(config, workflows.contentHash, promotionOf(config));
  logger?.info(
    {
      workflows: workflows.origin,
      deploymentName: versioning?.version.deploymentName ?? null,
      buildId: versioning?.version.buildId ?? null,
    },
    versioning ? 'worker version' : 'unversioned workers (TEMPORAL_WORKER_VERSIONING=false)',
  );
  const workers = await startWorkers({
    connection: connection.connection,
    namespace: connection.namespace,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities,
    workflowBundle: workflows.bundle,
    ...(versioning ? { versioning } : {}),
    ...pacingOf(config),
    ...(logger ? { logger } : {}),
    ...(proceedWhen ? { proceedWhen } : {}),
  }).catch(async (err: unknown) => {
    await router.close();
    throw err;
  });
  const done = workers.done.finally(() => router.close());
  return {
    done,
    readiness: workers.readiness,
    async shutdown() {
      await workers.shutdown();
      await done;
    },
  };
}

/**
 * The router of this process's workspaces (worker/workspace-router.ts): the configured one on `deps`, the
 * others of SYNC_WORKSPACES_FILE built at their first activity, each new key put under its own fleet budget
 * and, with `metrics`, watched by the process's metrics.
 */
export function routeWorkspaces(options: {
  connection: NativeConnection;
  namespace: string;
  config: Config;
  deps: WorkspaceDependencies;
  logger?: Logger;
  secrets?: Secrets;
  metrics?: SyncMetrics;
}): WorkspaceRouter {
  const { connection, namespace, config, deps, secrets } = options;
  const log = options.logger ?? pino({ level: 'silent' });
  const budgeted = new Set<string>();
  const ownBudget = fleetBudgetOf(config);
  if (ownBudget) budgeted.add(ownBudget.keyFingerprint);
  return new WorkspaceRouter({
    own: { workspace: config.SYNC_WORKSPACE, dependencies: deps },
    configOf: workspaceConfigLoader(config),
    build: async (workspaceConfig) => {
      const built = await buildDependencies(workspaceConfig, log, { metrics: options.metrics });
      const settings = fleetBudgetOf(workspaceConfig);
      if (settings && !budgeted.has(settings.keyFingerprint)) {
        budgeted.add(settings.keyFingerprint);
        attachFleetBudget({
          connection,
          namespace,
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          governor: governorOf(workspaceConfig),
          settings,
          logger: log,
        });
      }
      return built;
    },
    ...(secrets ? { secrets } : {}),
    logger: log,
  });
}
