import pino from 'pino';
import { SyncMetrics } from '../../worker/metrics.js';

/** The worker's metrics registry over sources that never change: no rate classes, nothing set aside. */
export function idleMetrics(): SyncMetrics {
  return new SyncMetrics({
    rateStats: () => [],
    openSetAside: async () => new Set(),
    freshnessSloMs: 7_200_000,
    logger: pino({ level: 'silent' }),
  });
}
