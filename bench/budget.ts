/**
 * Benchmark: is the whole rate budget used, by the whole worker fleet, in priority order? (issue 11)
 *
 *   npm run bench:budget -- [--tickets 2000] [--window-ms 30000] [--workers 1,3] [--seed 7]
 *
 * The companion enforces the spec's limits (list 60, detail 120, analytics 10, directory 60 requests) per
 * `--window-ms` instead of per minute — the spec's limits compressed in time — and the worker processes'
 * task queues are paced to match (SUPPORT_API_RATE_WINDOW). The default window is 30 s, not a few seconds:
 * the task queues leave room for Temporal's rate-limiter burst and dispatch jitter (1.25 s of rate, see
 * worker/workers.ts dispatchRate), which is 4 % of a detail budget over 30 s but 30 % over 3 s, so
 * short windows measure that allowance rather than the pipeline. The rolling thread re-read is off
 * (SYNC_THREAD_REVERIFY_PER_RUN=0): by design it fills the detail budget while other streams run.
 * For each fleet size (worker processes on one key, each `npm run worker`):
 *  1. a full initial sync of the world with a year of exports (SYNC_START_DATE one year back);
 *     per route class: requests (the companion's log), the lower bound time (requests / limit × window),
 *     429s; and the ratio wall time / max over classes of the lower bounds (target ≤ 1.1), and the busiest
 *     class's share of its budget over the run (requests / (limit × wall / window); target ≥ 0.95);
 *  2. an incremental run alone, then the same beside a backfill of the whole year (started first): the
 *     incremental run's wall time with and without it (target ratio ≤ 1.2: priorities serve the
 *     scheduled run first).
 * The last stdout line is one JSON object with every figure.
 */

import { parseArgs } from 'node:util';
import { DEFAULT_LIMITS, type RequestLogEntry, startCompanion } from '../companion/index.js';
import { routeClassFor } from '../connectors/support-api/index.js';
import { startEmbeddedPostgres } from '../embedded/postgres.js';
import { startTemporalDevServer } from '../embedded/temporal-server.js';
import { QUEUED_ROUTE_CLASSES, type QueuedRouteClass } from '../schemas/config.js';
import { ALL_STREAMS, type SyncMode, type SyncRunInput } from '../schemas/sync.js';
import { loadConfig, settingsFromConfig } from '../worker/config.js';
import { newRunId, type RunSummary, runSync } from '../worker/run-sync.js';
import { startWorkerProcess, type WorkerProcess } from './support/worker-process.js';

const { values } = parseArgs({
  options: {
    tickets: { type: 'string', default: '2000' },
    seed: { type: 'string', default: '7' },
    'window-ms': { type: 'string', default: '30000' },
    workers: { type: 'string', default: '1,3' },
  },
});
const tickets = Number(values.tickets);
const windowMs = Number(values['window-ms']);
const fleetSizes = values.workers.split(',').map(Number);
const DAY_MS = 24 * 60 * 60 * 1000;
const log = (line: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const postgres = await startEmbeddedPostgres({});
const temporal = await startTemporalDevServer({});
const limitOf = (c: QueuedRouteClass) => DEFAULT_LIMITS[c];
const yearAgo = () => new Date(Date.now() - 365 * DAY_MS).toISOString();

function perClass(entries: readonly RequestLogEntry[]) {
  const out = Object.fromEntries(
    QUEUED_ROUTE_CLASSES.map((c) => [c, { requests: 0, rateLimited: 0 }]),
  ) as Record<QueuedRouteClass, { requests: number; rateLimited: number }>;
  for (const e of entries) {
    const c = routeClassFor(e.method, e.path.replace(/^\/public\/v1/, '')) as QueuedRouteClass;
    if (!(c in out)) continue;
    out[c].requests += 1;
    if (e.status === 429) out[c].rateLimited += 1;
  }
  return out;
}

async function fleet(size: number) {
  const label = `fleet${size}`;
  const companion = await startCompanion({
    seed: Number(values.seed),
    tickets,
    rateLimits: true,
    rateLimitWindowMs: windowMs,
  });
  const databaseUrl = await postgres.createDatabase(`bench_budget_${size}`);
  const taskQueue = `bench-budget-${size}`;
  const env: Record<string, string> = {
    SUPPORT_API_URL: companion.baseUrl,
    SUPPORT_API_KEY: companion.keys.admin,
    DESTINATION_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SUPPORT_API_RATE_WINDOW: `PT${windowMs / 1000}S`,
    SYNC_START_DATE: yearAgo(),
    SYNC_THREAD_REVERIFY_PER_RUN: '0',
    LOG_LEVEL: 'warn',
  };
  const config = loadConfig({}, undefined, env);
  const workers: WorkerProcess[] = [];
  for (let i = 0; i < size; i++) workers.push(await startWorkerProcess({ ...env, LOG_LEVEL: 'info' }, log));
  log(`${label}: ${size} worker process(es) polling ${taskQueue}`);

  const run = async (mode: SyncMode, range?: SyncRunInput['range']) => {
    const now = new Date();
    const started = performance.now();
    const summary: RunSummary = await runSync(temporal.client, taskQueue, {
      runId: newRunId(now),
      mode,
      streams: [...ALL_STREAMS],
      settings: settingsFromConfig(config, now),
      ...(range ? { range } : {}),
    });
    if (summary.status !== 'succeeded') throw new Error(`${label} ${mode} failed: ${summary.error}`);
    return { ms: performance.now() - started, summary };
  };

  try {
    companion.clearRequestLog();
    const full = await run('incremental');
    const classes = perClass(companion.requestLog);
    const lowerBounds = Object.fromEntries(
      QUEUED_ROUTE_CLASSES.map((c) => [c, (classes[c].requests / limitOf(c)) * windowMs]),
    ) as Record<QueuedRouteClass, number>;
    const busiest = QUEUED_ROUTE_CLASSES.reduce((a, b) => (lowerBounds[a] >= lowerBounds[b] ? a : b));
    const share = classes[busiest].requests / ((limitOf(busiest) * full.ms) / windowMs);
    log(`${label}: full sync ${(full.ms / 1000).toFixed(1)} s; busiest class ${busiest}`);

    const alone = await run('incremental');
    log(`${label}: incremental alone ${(alone.ms / 1000).toFixed(1)} s`);
    const backfill = run('backfill', { from: yearAgo(), before: new Date().toISOString() });
    // Let the backfill fill the queues first: the incremental run then has to get ahead of it.
    await new Promise((r) => setTimeout(r, 2 * windowMs));
    const beside = await run('incremental');
    log(`${label}: incremental beside a year's backfill ${(beside.ms / 1000).toFixed(1)} s`);
    const backfilled = await backfill;
    log(`${label}: the backfill took ${(backfilled.ms / 1000).toFixed(1)} s`);
    return {
      workers: size,
      fullMs: Math.round(full.ms),
      perClass: Object.fromEntries(
        QUEUED_ROUTE_CLASSES.map((c) => [
          c,
          { ...classes[c], lowerBoundMs: Math.round(lowerBounds[c]), limitPerWindow: limitOf(c) },
        ]),
      ),
      busiest,
      ratio: Number((full.ms / lowerBounds[busiest]).toFixed(3)),
      busiestShare: Number(share.toFixed(3)),
      rateLimited: QUEUED_ROUTE_CLASSES.reduce((n, c) => n + classes[c].rateLimited, 0),
      incrementalAloneMs: Math.round(alone.ms),
      incrementalBesideBackfillMs: Math.round(beside.ms),
      incrementalRatio: Number((beside.ms / alone.ms).toFixed(3)),
      backfillMs: Math.round(backfilled.ms),
    };
  } finally {
    for (const w of workers) await w.stop();
    await companion.stop();
  }
}

const results = [];
try {
  for (const size of fleetSizes) results.push(await fleet(size));
} finally {
  await temporal.teardown();
  await postgres.stop();
}
console.log(
  `bench:budget — ${tickets} tickets, seed ${values.seed}, the spec's limits per ${windowMs} ms, exports from a year back`,
);
for (const r of results) {
  console.log(
    `\n${r.workers} worker process(es): full sync ${(r.fullMs / 1000).toFixed(1)} s, ratio to the busiest class's lower bound (${r.busiest}) ${r.ratio}, busiest class's share of its budget ${r.busiestShare}, 429s ${r.rateLimited}`,
  );
  console.table(
    Object.entries(r.perClass).map(([c, v]) => ({
      class: c,
      requests: v.requests,
      'limit/window': v.limitPerWindow,
      'lower bound (s)': (v.lowerBoundMs / 1000).toFixed(1),
      '429s': v.rateLimited,
    })),
  );
  console.log(
    `incremental run alone ${(r.incrementalAloneMs / 1000).toFixed(1)} s; beside a year's backfill ${(r.incrementalBesideBackfillMs / 1000).toFixed(1)} s (ratio ${r.incrementalRatio}); the backfill took ${(r.backfillMs / 1000).toFixed(1)} s`,
  );
}
console.log(JSON.stringify({ tickets, windowMs, fleets: results }));
