/**
 * The worker's metrics and probe server alone in a process of its own (test/unit/metrics-endpoint-requests
 * .test.ts): what ends a worker ends this process too, and the test sees it exit. Prints its URL, then serves
 * until killed.
 */
import pino from 'pino';
import { serveMetrics } from '../../worker/metrics-endpoint.js';
import { idleMetrics } from './idle-metrics.js';

const metrics = idleMetrics();
const endpoint = await serveMetrics(
  metrics,
  { host: '127.0.0.1', port: 0 },
  null,
  pino({ level: 'silent' }),
  () => () => ({
    ready: true,
    detail: 'ready',
  }),
);
process.stdout.write(`${endpoint.url}\n`);
