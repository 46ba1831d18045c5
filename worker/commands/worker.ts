import { buildDependencies } from '../compose.js';
import { temporalFor } from '../embedded.js';
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
