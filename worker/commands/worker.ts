import { buildDependencies } from '../compose.js';
import { temporalFor } from '../embedded.js';
import {
  isPermissionDenied,
  registerSearchAttributes,
  SETUP_PERMISSION_HINT,
} from '../search-attributes-setup.js';
import { startLocalWorkers } from '../workers.js';
import { withConfig } from './context.js';

/**
 * `worker`: polls the sync task queues of TEMPORAL_ADDRESS until SIGINT/SIGTERM. On a signal it stops
 * polling and lets running activities finish their page (30 s grace) before exiting.
 */
export function workerCommand(opts: { config?: string }): Promise<number> {
  return withConfig(opts, async (config, logger) => {
    const temporal = await temporalFor(config, logger, { embedIfUnset: false });
    const deps = await buildDependencies(config, logger);
    try {
      // A cluster the project did not start lacks the window workflows' search attributes: add them when
      // allowed, else say what to grant (the sync itself fails on a window start without them).
      try {
        const setup = await registerSearchAttributes(temporal.client, config.TEMPORAL_NAMESPACE);
        if (setup.added.length > 0) logger.info({ added: setup.added }, 'search attributes registered');
      } catch (err) {
        if (!isPermissionDenied(err)) throw err;
        logger.warn(
          `cannot register the search attributes; ask the cluster operator for ${SETUP_PERMISSION_HINT}`,
        );
      }
      const workers = await startLocalWorkers(temporal, config, deps.activities);
      logger.info({ address: temporal.address, taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
      await workers.done;
      logger.info('worker stopped');
      return 0;
    } finally {
      await deps.close();
      await temporal.close();
    }
  });
}
