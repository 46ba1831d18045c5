import { buildDependencies } from '../../worker/compose.js';
import { registerSearchAttributesAtWorkerStart } from '../../worker/search-attributes-setup.js';
import { startLocalWorkers } from '../../worker/workers.js';
import { withTemporal } from './context.js';
import { schedulesReadingOtherStreams } from './schedule.js';

/**
 * `worker`: polls the sync task queues of TEMPORAL_ADDRESS until SIGINT/SIGTERM. On a signal it stops
 * polling and lets running activities finish their page (30 s grace) before exiting.
 */
export function workerCommand(opts: { config?: string }): Promise<number> {
  return withTemporal(opts, { embedIfUnset: false }, async ({ config, logger, temporal }) => {
    const deps = await buildDependencies(config, logger);
    try {
      await registerSearchAttributesAtWorkerStart(temporal.client, config.TEMPORAL_NAMESPACE, logger);
      const workers = await startLocalWorkers(temporal, config, deps.activities);
      logger.info({ address: temporal.address, taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
      for (const drift of await schedulesReadingOtherStreams(temporal.client, config.SYNC_STREAMS)) {
        logger.warn(
          { schedule: drift.scheduleId, scheduled: drift.streams, SYNC_STREAMS: config.SYNC_STREAMS },
          'a schedule reads other streams than SYNC_STREAMS (its streams are fixed when created): run `schedule create` again',
        );
      }
      await workers.done;
      logger.info('worker stopped');
      return 0;
    } finally {
      await deps.close();
    }
  });
}
