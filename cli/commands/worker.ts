import { buildDependencies } from '../../worker/compose.js';
import {
  type MetricsAddress,
  type MetricsEndpoint,
  openMetricsEndpoint,
  type Readiness,
  STARTING,
} from '../../worker/metrics-endpoint.js';
import { registerSearchAttributesAtWorkerStart } from '../../worker/search-attributes-setup.js';
import { startLocalWorkers } from '../../worker/workers.js';
import { reportFailure, withTemporal } from './context.js';
import { scheduleIdsFor, schedulesReadingOtherStreams } from './schedule.js';

/**
 * `worker`: polls the sync task queues of TEMPORAL_ADDRESS until SIGINT/SIGTERM. On a signal it stops
 * polling and lets running activities finish their page (30 s grace) before exiting. With `--metrics-port`
 * it serves its Prometheus metrics meanwhile.
 */
export function workerCommand(opts: { config?: string; metricsPort?: MetricsAddress }): Promise<number> {
  return withTemporal(opts, { embedIfUnset: false }, async ({ config, logger, temporal, secrets }) => {
    const deps = await buildDependencies(config, logger, { metrics: opts.metricsPort !== undefined });
    let endpoint: MetricsEndpoint | undefined;
    let readiness: Readiness = STARTING;
    try {
      endpoint = await openMetricsEndpoint(
        deps.metrics,
        opts.metricsPort,
        config.METRICS_HOST,
        logger,
        () => readiness,
      );
      if (endpoint) logger.info({ url: endpoint.url }, 'metrics endpoint listening');
      await registerSearchAttributesAtWorkerStart(temporal.client, temporal.namespace, logger);
      const workers = await startLocalWorkers(temporal, config, deps, logger, secrets);
      readiness = workers.readiness;
      logger.info({ address: temporal.address, taskQueue: config.TEMPORAL_TASK_QUEUE }, 'worker running');
      for (const drift of await schedulesReadingOtherStreams(
        temporal.client,
        scheduleIdsFor(config),
        config.SYNC_STREAMS,
      )) {
        logger.warn(
          { schedule: drift.scheduleId, scheduled: drift.streams, SYNC_STREAMS: config.SYNC_STREAMS },
          'a schedule reads other streams than SYNC_STREAMS (its streams are fixed when created): run `schedule update`',
        );
      }
      await workers.done;
      logger.info('worker stopped');
      return 0;
    } catch (err) {
      return reportFailure(err);
    } finally {
      await endpoint?.close();
      await deps.close();
    }
  });
}
