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
 * (requests / (limit × wall / window); the class queue dispatches at most 0.952 of it at 30 s windows, see
 * worker/workers.ts dispatchRate). Targets: ≥ 0.9 at 2 %, ≥ 0.8 at 8 %. Last stdout line: one JSON object.
 */

import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { DEFAULT_LIMITS, startCompanion } from '../companion/index.js';
import { routeClassFor } from '../connectors/support-api/index.js';
import { startEmbeddedPostgres } from '../embedded/postgres.js';
import { startTemporalDevServer } from '../embedded/temporal-server.js';
import { buildDependencies } from '../worker/compose.js';
import { loadConfig, settingsFromConfig } from '../worker/config.js';
import { newRunId, runSync } from '../worker/run-sync.js';
import { classRatesOf, startWorkers } from '../worker/workers.js';

const { values } = parseArgs({
  options: {
    tickets: { type: 'string', default: '1000' },
    seed: { type: 'string', default: '7' },
    'window-ms': { type: 'string', default: '30000' },
    rates: { type: 'string', default: '0,0.02,0.08' },
  },
});
const tickets = Number(values.tickets);
const windowMs = Number(values['window-ms']);
const rates = values.rates.split(',').map(Number);
const log = (line: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const quiet = pino({ level: 'silent' });

const postgres = await startEmbeddedPostgres({});
const temporal = await startTemporalDevServer({});
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
    const databaseUrl = await postgres.createDatabase(`bench_thread_faults_${Math.round(rate * 1000)}`);
    const taskQueue = `bench-thread-faults-${Math.round(rate * 1000)}`;
    const config = loadConfig({}, undefined, {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      SUPPORT_API_RATE_WINDOW: `PT${windowMs / 1000}S`,
      SYNC_THREAD_REVERIFY_PER_RUN: '0',
      LOG_LEVEL: 'silent',
    });
    const deps = await buildDependencies(config, quiet);
    const workers = await startWorkers({
      connection: temporal.nativeConnection,
      namespace: 'default',
      taskQueue,
      activities: deps.activities,
      classRates: classRatesOf(config),
      shutdownGraceTime: '5 seconds',
    });
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      log(`${rate * 100} % faults: syncing ${tickets} tickets and their threads`);
      const now = new Date();
      const summary = await runSync(temporal.client, taskQueue, {
        runId: newRunId(now),
        mode: 'incremental',
        streams: ['tickets', 'ticket_messages'],
        settings: settingsFromConfig(config, now),
      });
      if (summary.status !== 'succeeded') throw new Error(`${rate}: ${summary.error}`);
      const window = (
        await db.query(
          `SELECT extract(epoch FROM finished_at - started_at) * 1000 AS ms FROM support._sync_runs
           WHERE stream = 'ticket_messages' AND parent_run_id = $1`,
          [summary.run_id],
        )
      ).rows[0];
      const threads = Number(
        (
          await db.query('SELECT count(*) AS n FROM support._sync_state WHERE stream = $1', [
            'ticket_messages',
          ])
        ).rows[0].n,
      );
      const detail = companion.requestLog.filter(
        (e) => routeClassFor(e.method, e.path.replace(/^\/public\/v1/, '')) === 'detail',
      );
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
      await workers.shutdown();
      await db.end();
      await deps.close();
      await companion.stop();
    }
  }
} finally {
  await temporal.teardown();
  await postgres.stop();
}
console.log(
  `bench:thread-faults — ${tickets} tickets, the spec's limits per ${windowMs} ms, faults 5xx/reset/slow/html`,
);
console.table(results);
console.log(JSON.stringify({ tickets, windowMs, results }));
