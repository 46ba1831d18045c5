/**
 * The worker's metrics and probe server alone in a process of its own (test/unit/metrics-endpoint-requests
 * .test.ts): what ends a worker ends this process too, and the test sees it exit. Prints its URL, then serves
 * until killed.
 */
import pino from 'pino';
import { SyncMetrics } from '../../worker/metrics.js';
import { serveMetrics } from '../../worker/metrics-endpoint.js';

const logger = pino({ level: 'silent' });
const metrics = new SyncMetrics({
  rateStats: () => [],
  warehouseNewest: async () => ({
    tickets: null,
    ticket_messages: null,
    csat_surveys: null,
    agent_sessions: null,
  }),
  freshnessSloMs: 7_200_000,
  logger,
});
const endpoint = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 }, null, logger, () => () => ({
  ready: true,
  detail: 'ready',
}));
process.stdout.write(`${endpoint.url}\n`);
