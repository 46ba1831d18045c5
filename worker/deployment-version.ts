import { readFileSync } from 'node:fs';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Config } from '../schemas/config.js';

/** This deployment's name: TEMPORAL_DEPLOYMENT_NAME, else the task queue (dots, which Temporal reserves, as dashes). */
export function deploymentNameOf(
  config: Pick<Config, 'TEMPORAL_DEPLOYMENT_NAME' | 'TEMPORAL_TASK_QUEUE'>,
): string {
  return config.TEMPORAL_DEPLOYMENT_NAME ?? config.TEMPORAL_TASK_QUEUE.replaceAll('.', '-');
}

/**
 * The project's package version: `package.json` one folder up from source (`worker/`), two from `dist/worker/`
 * (the image copies package.json next to dist/).
 */
export function packageVersion(): string {
  for (const relative of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'support-sync' && pkg.version) return pkg.version;
    } catch {
      // not this folder: try the next
    }
  }
  throw new Error('package.json of support-sync not found next to worker/ or dist/: set TEMPORAL_BUILD_ID');
}

/** The default build id: the package version and the workflow bundle's content hash. */
export function defaultBuildId(packageVersion: string, bundleHash: string): string {
  return `${packageVersion}-${bundleHash}`;
}

/**
 * When a process makes its build the deployment's current version:
 * - `when-new`: the deployment has no current version, or this build has never been current or ramping (a
 *   new deploy's first worker). A build superseded once is left alone: an old pod restarting never takes
 *   new runs back.
 * - `when-none`: only when the deployment has no current version (otherwise nothing would run); an operator
 *   promotes builds (`temporal worker deployment set-current-version`).
 */
export type Promotion = 'when-new' | 'when-none';

export interface WorkerVersioning {
  version: WorkerDeploymentVersion;
  promotion: Promotion;
}

type WorkflowService = NativeConnection['workflowService'];

const REGISTRATION_TIMEOUT_MS = 30_000;

/**
 * Makes `version` the current version of its deployment when `promotion` says so. Called once the
 * workers poll: the server knows a version (and accepts it as current) only after its workers polled.
 * Returns whether it promoted.
 */
export async function promoteVersion(
  service: WorkflowService,
  namespace: string,
  versioning: WorkerVersioning,
  logger: Logger,
): Promise<boolean> {
  const { deploymentName, buildId } = versioning.version;
  const deadline = Date.now() + REGISTRATION_TIMEOUT_MS;
  for (let attempt = 0; ; attempt++) {
    try {
      const { workerDeploymentInfo, conflictToken } = await service.describeWorkerDeployment({
        namespace,
        deploymentName,
      });
      const routing = workerDeploymentInfo?.routingConfig;
      const current = routing?.currentDeploymentVersion;
      if (current?.buildId === buildId) return false;
      if (current && versioning.promotion === 'when-none') return false;
      const mine = workerDeploymentInfo?.versionSummaries?.find(
        (v) => v.deploymentVersion?.buildId === buildId,
      );
      if (!mine) throw new VersionNotRegistered();
      if (current && (mine.currentSinceTime || mine.rampingSinceTime || mine.firstActivationTime)) {
        logger.info(
          { deploymentName, buildId, current: current.buildId },
          'this build was current or ramping before: left as it is (set-current-version makes it current again)',
        );
        return false;
      }
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName,
        buildId,
        conflictToken,
        identity: `support-sync worker ${buildId}`,
      });
      logger.info({ deploymentName, buildId, previous: current?.buildId ?? null }, 'build made current');
      return true;
    } catch (err) {
      // A deployment or version the server has not registered yet (the first polls are in flight), or a
      // concurrent change of the routing (another worker of this build promoting it): look again.
      if (Date.now() > deadline || !retriable(err))
        throw new Error(
          `could not make build ${buildId} current in Worker Deployment ${deploymentName}: ${(err as Error).message}`,
        );
      // Registration follows the first polls within a second or so: look often (describing is cheap), so a
      // process that starts a run at once does not wait out a long backoff step.
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, 25 * 2 ** attempt)));
    }
  }
}

class VersionNotRegistered extends Error {
  constructor() {
    super('the version is not registered yet');
  }
}

/** gRPC NOT_FOUND (5), FAILED_PRECONDITION (9), ABORTED (10), UNAVAILABLE (14), or not registered yet. */
function retriable(err: unknown): boolean {
  if (err instanceof VersionNotRegistered) return true;
  const code = (err as { code?: number }).code;
  return code === 5 || code === 9 || code === 10 || code === 14;
}
