/**
 * Benchmark: is the whole rate budget used, by the whole worker fleet, in priority order? (issue 11)
 *
 *   npm run bench:budget -- [--tickets 2000] [--window-ms 30000] [--workers 1,3] [--seed 7]
 *
 * The companion enforces the spec's limits (list 60, detail 120, analytics 10, directory 60 requests) per
 * `--window-ms` instead of per minute — the spec's limits compressed in time — and the key's budget
 * workflow spends it per the same window (SUPPORT_API_RATE_WINDOW). The default window is 30 s, not a few
 * seconds: the budget keeps 1.25 s before each reset and probes after it, a larger share of a short window,
 * so short windows measure that margin rather than the pipeline. The rolling thread re-read is off
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

import { DEFAULT_LIMITS, type RequestLogEntry, startCompanion } from '../companion/index.js';
import { QUEUED_ROUTE_CLASSES, type QueuedRouteClass } from '../schemas/config.js';
import type { SyncMode, SyncRunInput } from '../schemas/run-input.js';
import { benchFlags, log, requestsByClass, startServices, syncTarget, timedSync } from './support/harness.js';
import { startWorkerProcess, type WorkerProcess } from './support/worker-process.js';

const values = benchFlags(
  'npm run bench:budget -- [--tickets 2000] [--window-ms 30000] [--workers 1,3] [--seed 7]',
  {
    tickets: { type: 'string', default: '2000' },
    'window-ms': { type: 'string', default: '30000' },
    workers: { type: 'string', default: '1,3' },
  },
);
const tickets = Number(values.tickets);
const windowMs = Number(values['window-ms']);
const fleetSizes = values.workers.split(',').map(Number);
const DAY_MS = 24 * 60 * 60 * 1000;

const services = await startServices();
const limitOf = (c: QueuedRouteClass) => DEFAULT_LIMITS[c];
const yearAgo = () => new Date(Date.now() - 365 * DAY_MS).toISOString();

/** Requests and 429s per queued route class. */
function perClass(entries: readonly RequestLogEntry[]) {
  const requests = requestsByClass(entries);
  const rateLimited = requestsByClass(entries.filter((e) => e.status === 429));
  return Object.fromEntries(
    QUEUED_ROUTE_CLASSES.map((c) => [c, { requests: requests[c], rateLimited: rateLimited[c] }]),
  ) as Record<QueuedRouteClass, { requests: number; rateLimited: number }>;
}

async function fleet(size: number) {
  const label = `fleet${size}`;
  const companion = await startCompanion({
    seed: Number(values.seed),
    tickets,
    rateLimits: true,
    rateLimitWindowMs: windowMs,
  });
  const taskQueue = `bench-budget-${size}`;
  const target = await syncTarget(services, companion, {
    database: `bench_budget_${size}`,
    taskQueue,
    env: {
      SUPPORT_API_RATE_WINDOW: `PT${windowMs / 1000}S`,
      SYNC_START_DATE: yearAgo(),
      SYNC_THREAD_REVERIFY_PER_RUN: '0',
      LOG_LEVEL: 'warn',
    },
  });
  const workers: WorkerProcess[] = [];
  for (let i = 0; i < size; i++)
    workers.push(await startWorkerProcess({ ...target.env, LOG_LEVEL: 'info' }, log));
  log(`${label}: ${size} worker process(es) polling ${taskQueue}`);

  const run = (mode: SyncMode, range?: SyncRunInput['range']) =>
    timedSync(services, target, `${label} ${mode}`, { mode, ...(range ? { range } : {}) });

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
  await services.stop();
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
