import pino from 'pino';
import { SyncMetrics } from '../../worker/metrics.js';

/** The worker's metrics registry over sources that never change: no rate classes, an empty warehouse. */
export function idleMetrics(): SyncMetrics {
  return new SyncMetrics({
    rateStats: () => [],
    warehouseNewest: async () => ({
      tickets: null,
      ticket_messages: null,
      csat_surveys: null,
      agent_sessions: null,
    }),
    freshnessSloMs: 7_200_000,
    logger: pino({ level: 'silent' }),
  });
}
