import pino from 'pino';
import { SyncMetrics } from '../../worker/metrics.js';

/**
 * The worker's metrics registry over sources that never change: no rate classes, nothing set aside; with
 * `workspaceLabel`, as SYNC_METRICS_WORKSPACE_LABEL=true makes it.
 */
export function idleMetrics(options: { workspaceLabel?: boolean } = {}): SyncMetrics {
  return new SyncMetrics({
    rateStats: () => [],
    openSetAside: async () => new Set(),
    freshnessSloMs: 7_200_000,
    logger: pino({ level: 'silent' }),
    ...(options.workspaceLabel ? { workspaceLabel: { limit: 50 } } : {}),
  });
}
