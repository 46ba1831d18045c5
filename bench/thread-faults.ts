/**
 * Benchmark: thread sync throughput under transient faults (issue 14), as a share of the detail budget.
 *
 *   npm run bench:thread-faults -- [--tickets 1000] [--window-ms 30000] [--rates 0,0.02,0.08]
 *
 * For each fault rate: a fresh companion (the spec's limits per `--window-ms`, faults of every kind —
 * 5xx, connection resets, slow answers, HTML error pages — at that rate), a fresh warehouse, in-process
 * workers whose class queues follow the same window, and an initial sync of tickets and threads. Printed per
 * rate: the threads stream's wall time (from `_sync_runs`), detail requests (retries included, from the
 * companion's log), requests per thread, and the share of the detail budget used over the stream
 * (requests / (limit × wall / window); the key's budget workflow spends whole windows, less the margin it
 * keeps before each reset). Targets: ≥ 0.9 at 2 %, ≥ 0.8 at 8 %. Last stdout line: one JSON object.
 */

import pg from 'pg';
import { DEFAULT_LIMITS, startCompanion } from '../companion/index.js';
import {
  benchFlags,
  log,
  routeClassOf,
  startInProcessWorkers,
  startServices,
  syncTarget,
  timedSync,
} from './support/harness.js';

const values = benchFlags(
  'npm run bench:thread-faults -- [--tickets 1000] [--window-ms 30000] [--rates 0,0.02,0.08] [--seed 7]',
  {
    tickets: { type: 'string', default: '1000' },
    'window-ms': { type: 'string', default: '30000' },
    rates: { type: 'string', default: '0,0.02,0.08' },
  },
);
const tickets = Number(values.tickets);
const windowMs = Number(values['window-ms']);
const rates = values.rates.split(',').map(Number);

const services = await startServices();
const results = [];
try {
  for (const rate of rates) {
    const companion = await startCompanion({
      seed: Number(values.seed),
      tickets,
      rateLimits: true,
      rateLimitWindowMs: windowMs,
      ...(rate > 0 ? { faults: { rate, kinds: ['5xx', 'reset', 'slow', 'html'], slowMs: 2000 } } : {}),
    });
    const target = await syncTarget(services, companion, {
      database: `bench_thread_faults_${Math.round(rate * 1000)}`,
      taskQueue: `bench-thread-faults-${Math.round(rate * 1000)}`,
      env: {
        SUPPORT_API_RATE_WINDOW: `PT${windowMs / 1000}S`,
        SYNC_THREAD_REVERIFY_PER_RUN: '0',
        LOG_LEVEL: 'silent',
      },
    });
    const workers = await startInProcessWorkers(services, target);
    const db = new pg.Client({ connectionString: target.databaseUrl });
    await db.connect();
    try {
      log(`${rate * 100} % faults: syncing ${tickets} tickets and their threads`);
      const { summary } = await timedSync(services, target, `${rate * 100} % faults`, {
        streams: ['tickets', 'ticket_messages'],
      });
      const window = (
        await db.query(
          `SELECT extract(epoch FROM finished_at - started_at) * 1000 AS ms FROM support._sync_runs
           WHERE stream = 'ticket_messages' AND parent_run_id = $1`,
          [summary.run_id],
        )
      ).rows[0];
      const threads = Number((await db.query('SELECT count(*) AS n FROM support._thread_queue')).rows[0].n);
      const detail = companion.requestLog.filter((e) => routeClassOf(e) === 'detail');
      const faulted = detail.filter((e) => e.status >= 500 || e.status === 0).length;
      const ms = Number(window.ms);
      const share = detail.length / ((DEFAULT_LIMITS.detail * ms) / windowMs);
      results.push({
        faultRate: rate,
        threads,
        threadsMs: Math.round(ms),
        detailRequests: detail.length,
        detailFaultAnswers: faulted,
        requestsPerThread: Number((detail.length / threads).toFixed(3)),
        detailBudgetShare: Number(share.toFixed(3)),
      });
      log(
        `${rate * 100} % faults: threads ${(ms / 1000).toFixed(1)} s, ${detail.length} detail requests, share ${share.toFixed(3)}`,
      );
    } finally {
      await workers.stop();
      await db.end();
      await companion.stop();
    }
  }
} finally {
  await services.stop();
}
console.log(
  `bench:thread-faults — ${tickets} tickets, the spec's limits per ${windowMs} ms, faults 5xx/reset/slow/html`,
);
console.table(results);
console.log(JSON.stringify({ tickets, windowMs, results }));
