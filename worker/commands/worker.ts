import { buildDependencies } from '../compose.js';
import { analyticsQueueOf } from '../config.js';
import { temporalTarget } from '../embedded.js';
import { startWorkers } from '../workers.js';
import { withConfig } from './context.js';

/**
 * `worker`: polls the sync task queues of TEMPORAL_ADDRESS until SIGINT/SIGTERM. On a signal it stops
 * polling and lets running activities finish their page (30 s grace) before exiting.
 */
export function workerCommand(opts: { config?: string }): Promise<number> {
  return withConfig(opts, async (config, logger) => {
    const temporal = await temporalTarget(
      {
        address: config.TEMPORAL_ADDRESS,
        namespace: config.TEMPORAL_NAMESPACE,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        persistent: false,
        ui: false,
      },
      logger,
    );
    const deps = await buildDependencies(config, logger);
    try {
      const workers = await startWorkers({
        connection: temporal.connection,
        namespace: temporal.namespace,
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        analyticsTaskQueue: analyticsQueueOf(config.TEMPORAL_TASK_QUEUE),
        activities: deps.activities,
        analyticsRequestsPerMinute: config.ANALYTICS_REQUESTS_PER_MINUTE,
      });
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
