import { buildDependencies } from '../../worker/compose.js';
import {
  registerSearchAttributesIfAllowed,
  SETUP_PERMISSION_HINT,
} from '../../worker/search-attributes-setup.js';
import { startLocalWorkers } from '../../worker/workers.js';
import { withConfig, withTemporal } from './context.js';

/**
 * `worker`: polls the sync task queues of TEMPORAL_ADDRESS until SIGINT/SIGTERM. On a signal it stops
 * polling and lets running activities finish their page (30 s grace) before exiting.
 */
export function workerCommand(opts: { config?: string }): Promise<number> {
  return withConfig(opts, (config, logger) =>
    withTemporal(config, logger, { embedIfUnset: false }, async (temporal) => {
      const deps = await buildDependencies(config, logger);
      try {
        // A cluster the project did not start lacks the window workflows' search attributes: add them when
        // allowed, else say what to grant (the sync itself fails on a window start without them).
        const setup = await registerSearchAttributesIfAllowed(temporal.client, config.TEMPORAL_NAMESPACE);
        if (setup === 'permission-denied')
          logger.warn(
            `cannot register the search attributes; ask the cluster operator for ${SETUP_PERMISSION_HINT}`,
          );
        else if (setup.added.length > 0) logger.info({ added: setup.added }, 'search attributes registered');
        const workers = await startLocalWorkers(temporal, config, deps.activities);
        logger.info({ address: temporal.address, taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
        await workers.done;
        logger.info('worker stopped');
        return 0;
      } finally {
        await deps.close();
      }
    }),
  );
}
