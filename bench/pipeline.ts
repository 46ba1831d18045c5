/**
 * Benchmark: a full sync of a large companion world (rate limits off) through the real pipeline — a worker
 * child process, a Temporal dev server and an embedded PostgreSQL, all provisioned here — then incremental
 * runs with no changes in the world.
 *
 *   npm run bench:pipeline -- [--tickets 50000] [--seed 7] [--thread-concurrency 4]
 *
 * Figures (printed as a table, then one JSON line):
 *  - rows/s of the full sync (rows in the warehouse / wall time from start to the run's completion),
 *    against a baseline measured in the same run: a plain client crawl of the same world with the same
 *    concurrency (tickets pages one after the other, `threadConcurrency` threads at a time, reference
 *    lists, exports in 90-day windows), which writes nothing;
 *  - requests (from the companion's request log) and requests per row, against the lower bound: the pages
 *    needed at the maximum page size (100), i.e.
 *        ceil(tickets / 100)                                  tickets (with ticket fields)
 *      + Σ over tickets of max(1, ceil(messages / 100))       threads: one request per ticket at least
 *                                                             (the API gives no message count)
 *      + Σ over 90-day windows of max(1, ceil(surveys / 100)) CSAT export by sent date (every survey once)
 *      + Σ over 90-day windows of max(1, ceil(sessions / 100)) agent sessions (overlapping a window)
 *      + Σ over views, tags, teams, agents of max(1, ceil(n / 100)) + 1 for the metric catalog
 *    over the same range the pipeline reads (SYNC_START_DATE → the run's start). The pipeline's second
 *    CSAT pass (by submitted date) is by design (late answers on incremental runs) and counts against it;
 *  - peak worker memory: the worker runs as a child process (`node --import tsx cli/main.ts worker`, the
 *    process `npx tsx` would start) and its peak RSS is the kernel's VmHWM of that process, read just
 *    before it is stopped; RSS is also sampled every 250 ms for the peak during the full sync alone;
 *  - pages/s of the full sync end to end (pages the run reports / its wall time), against the crawl's
 *    (its requests / its wall time);
 *  - Temporal's overhead per page, from the worker's own SDK metrics (`--metrics-port`), differences of the
 *    histograms over the full sync: (Σ activity schedule→start + Σ workflow-task schedule→start
 *    + Σ workflow-task execution) / pages — the time a page's chain spends waiting in Temporal's queues and
 *    in the workflow code that schedules the next page — against Σ activity execution / pages (the API
 *    request and the warehouse write). Not counted: the gRPC round trips that report completions;
 *  - the worker's RSS at 0, 10, 25, 50, 75 and 100% of the full sync's requests (with the peak up to there
 *    and its main thread's V8 heap), so growth with the world shows; `BENCH_WORKER_NODE_OPTIONS` sets the
 *    worker's NODE_OPTIONS (e.g. `--max-old-space-size=…`, which also turns off TEMPORAL_WORKFLOW_HEAP_MB's
 *    cap) and `TEMPORAL_WORKFLOW_HEAP_MB` in the bench's environment reaches the worker;
 *  - incremental runs with no changes: requests per endpoint class and wall time, with the default
 *    thread look-back (SYNC_THREAD_LOOKBACK's default, PT24H: threads of tickets created in the last day are re-read by design) and with
 *    SYNC_THREAD_LOOKBACK=PT0S.
 */

import pg from 'pg';
import { type RequestLogEntry, startCompanion } from '../companion/index.js';
import type { SyncSettings } from '../schemas/run-input.js';
import { STREAM_TABLE_NAMES } from '../schemas/warehouse.js';
import { settingsFromConfig } from '../worker/config.js';
import type { RunSummary } from '../worker/run-sync.js';
import { plainCrawl } from './support/crawl.js';
import { benchFlags, log, startServices, sum, syncTarget, timedSync } from './support/harness.js';
import {
  metricSum,
  scrape,
  type TemporalTotals,
  temporalDelta,
  temporalTotals,
} from './support/prometheus.js';
import { startWorkerProcess } from './support/worker-process.js';

const values = benchFlags('npm run bench:pipeline -- [--tickets 50000] [--seed 7] [--thread-concurrency 4]', {
  tickets: { type: 'string', default: '50000' },
  'thread-concurrency': { type: 'string' },
  'skip-baseline': { type: 'boolean', default: false },
});
const tickets = Number(values.tickets);
const DAY_MS = 24 * 60 * 60 * 1000;

// ---------------------------------------------------------------------------------------------------------
// Source, warehouse, Temporal

log(`generating a ${tickets}-ticket world`);
const companion = await startCompanion({ seed: Number(values.seed), tickets, rateLimits: false });
log(`companion at ${companion.baseUrl}`);
const taskQueue = 'bench-pipeline';
const services = await startServices();
const startDate = new Date(Date.now() - 200 * DAY_MS).toISOString();
const target = await syncTarget(services, companion, {
  database: 'bench_pipeline',
  taskQueue,
  env: {
    SYNC_START_DATE: startDate,
    // Rate limits are off: no server-side pacing of the route classes' task queues either.
    SUPPORT_API_RATE_LIMITS: 'off',
    LOG_LEVEL: 'info',
  },
});
log(`postgres ${services.postgres.port}, temporal ${services.temporal.address}`);
/** The thread settings the flags set, over the configuration's, in every run and in the baseline. */
const flagSettings: Partial<SyncSettings> = {
  ...(values['thread-concurrency'] ? { threadConcurrency: Number(values['thread-concurrency']) } : {}),
};
const baseSettings: SyncSettings = { ...settingsFromConfig(target.config, new Date()), ...flagSettings };

// ---------------------------------------------------------------------------------------------------------
// Request accounting

type Category = 'tickets' | 'threads' | 'exports' | 'reference' | 'other';
function categoryOf(e: RequestLogEntry): Category {
  const p = e.path.replace(/^\/public\/v1/, '');
  if (p === '/tickets') return 'tickets';
  if (/^\/tickets\/\d+\/messages$/.test(p)) return 'threads';
  if (p === '/csat-surveys' || p === '/agent-sessions') return 'exports';
  if (['/views', '/tags', '/teams', '/agents', '/reports/metrics'].includes(p)) return 'reference';
  return 'other';
}
function requestCounts(): Record<Category | 'total' | 'errors', number> {
  const out = { tickets: 0, threads: 0, exports: 0, reference: 0, other: 0, total: 0, errors: 0 };
  for (const e of companion.requestLog) {
    out[categoryOf(e)] += 1;
    out.total += 1;
    if (e.status >= 400) out.errors += 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Baseline: the plain client crawl of the same world, same concurrency, writing nothing (support/crawl.ts)

const baselineCrawl = (until: string) =>
  plainCrawl(companion, {
    startDate,
    until,
    threadConcurrency: baseSettings.threadConcurrency,
    csatIncludeComments: baseSettings.csatIncludeComments,
  });

// ---------------------------------------------------------------------------------------------------------
// Runs

const db = new pg.Client({ connectionString: target.databaseUrl });
await db.connect();

async function warehouseRows(): Promise<Record<string, number>> {
  const tables = STREAM_TABLE_NAMES;
  const out: Record<string, number> = {};
  for (const t of tables) {
    const r = await db.query<{ n: string }>(`SELECT count(*) AS n FROM support.${t}`);
    out[t] = Number(r.rows[0]!.n);
  }
  return out;
}

interface Measured {
  summary: RunSummary;
  ms: number;
  requests: ReturnType<typeof requestCounts>;
}

/**
 * The worker's memory at one moment of a run: RSS (/proc) and V8's heap of its main thread (its /metrics),
 * with the requests the API has served the run so far (the progress counts a stream's pages only when its
 * window ends or continues as new; every page is a request, and a full sync without limits retries none).
 */
interface MemorySample {
  elapsedMs: number;
  requests: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
}
const memorySamples: MemorySample[] = [];
async function sampleMemory(elapsedMs: number): Promise<void> {
  const rss = worker.rss();
  const requests = companion.requestLog.length;
  const text = worker.metricsUrl ? await scrape(worker.metricsUrl).catch(() => '') : '';
  memorySamples.push({
    elapsedMs,
    requests,
    rss,
    heapUsed: metricSum(text, 'nodejs_heap_size_used_bytes'),
    heapTotal: metricSum(text, 'nodejs_heap_size_total_bytes'),
  });
}
async function temporalNow(): Promise<TemporalTotals> {
  return temporalTotals(worker.metricsUrl ? await scrape(worker.metricsUrl) : '');
}

async function pipelineRun(
  label: string,
  overrides: Partial<SyncSettings> = {},
  sampling = false,
): Promise<Measured> {
  companion.clearRequestLog();
  log(`${label}: started`);
  let lastLine = Number.NEGATIVE_INFINITY;
  let lastSample = 0;
  const pending: Promise<void>[] = [];
  if (sampling) pending.push(sampleMemory(0));
  const { ms, summary } = await timedSync(services, target, label, {
    settings: { ...flagSettings, ...overrides },
    onProgress: (progress, elapsedMs) => {
      const streams = Object.entries(progress.streams);
      if (sampling && elapsedMs - lastSample >= 2_000) {
        lastSample = elapsedMs;
        pending.push(sampleMemory(elapsedMs));
      }
      if (elapsedMs - lastLine < 10_000) return;
      lastLine = elapsedMs;
      const parts = streams.map(([s, p]) => `${s} ${p.status} ${p.pages}p/${p.rows}r`);
      log(
        `${label}: ${Math.round(elapsedMs / 1000)} s, ${companion.requestLog.length} requests, worker RSS ${Math.round(worker.rss() / 2 ** 20)} MB; ${parts.join(', ')}`,
      );
    },
  });
  if (sampling) pending.push(sampleMemory(ms));
  await Promise.all(pending);
  log(`${label}: done in ${(ms / 1000).toFixed(1)} s`);
  return { summary, ms, requests: requestCounts() };
}

/**
 * At each share of the run's requests, the highest RSS sampled up to it (and the sample there): whether the
 * worker's memory grows with the pages read.
 */
function memoryAt(
  shares: number[],
  total: number,
): Array<{ share: number; peakSoFar: number } & MemorySample> {
  const sorted = [...memorySamples].sort((a, b) => a.elapsedMs - b.elapsedMs);
  return shares.flatMap((share) => {
    const i = sorted.findIndex((m) => m.requests >= share * total);
    if (i < 0) return [];
    const peakSoFar = Math.max(...sorted.slice(0, i + 1).map((m) => m.rss));
    return [{ share, peakSoFar, ...sorted[i]! }];
  });
}

// The worker serves /metrics (its V8 heap, the Temporal SDK's task latencies) on a free loopback port.
const worker = await startWorkerProcess(target.env, log, ['--metrics-port', '127.0.0.1:0']);
log(`worker pid ${worker.child.pid} polling, metrics at ${worker.metricsUrl}`);
let results: Record<string, unknown>;
try {
  const temporalBefore = await temporalNow();
  const full = await pipelineRun('full sync', {}, true);
  const temporal = temporalDelta(temporalBefore, await temporalNow());
  const fullPeak = worker.sampledPeak();
  const memory = memoryAt([0, 0.1, 0.25, 0.5, 0.75, 1], full.requests.total);
  const rows = await warehouseRows();
  const rowsTotal = sum(Object.values(rows));
  worker.resetSample();
  const noChange = await pipelineRun('incremental, no changes (thread look-back PT24H, the default)');
  const noChangeNoLookback = await pipelineRun('incremental, no changes (thread look-back PT0S)', {
    threadLookbackMs: 0,
  });
  const recentTickets = (
    await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM support.tickets WHERE created_at >= now() - interval '24 hours'`,
    )
  ).rows[0]!.n;
  const workerHwm = worker.hwm();

  log('baseline: plain client crawl of the same world');
  const base = await baselineCrawl(new Date().toISOString());
  const bound = sum(Object.values(base.bound));

  const mb = (b: number) => `${(b / 2 ** 20).toFixed(0)} MB`;
  const r2 = (x: number) => Number(x.toFixed(2));
  const fullRps = rowsTotal / (full.ms / 1000);
  const pages = full.summary.totals.pages;
  const fullPps = pages / (full.ms / 1000);
  const basePps = base.requests / (base.ms / 1000);
  // Temporal's part of a page, as the worker's SDK metrics measure it over the full sync: the time its
  // tasks waited in Temporal's queues (activity schedule → start, workflow task schedule → start) plus the
  // workflow tasks' execution (replaying the workflow code that decides the next page), summed and divided
  // by the pages. What it leaves out: the gRPC round trips that report a completion (not in any histogram).
  // Against it, the activity's own execution (the API request and the warehouse write).
  const temporalS =
    temporal.activityScheduleToStart.sum +
    temporal.workflowTaskScheduleToStart.sum +
    temporal.workflowTaskExecution.sum;
  const overheadMs = (temporalS / pages) * 1000;
  const executionMs = (temporal.activityExecution.sum / pages) * 1000;
  const ms1 = (x: number) => `${x.toFixed(1)} ms`;
  const baseRps = base.rows / (base.ms / 1000);
  const table = [
    {
      figure: 'world',
      value: `${tickets} tickets; warehouse rows ${JSON.stringify(rows)}`,
      baseline: JSON.stringify(base.counts),
      ratio: '',
    },
    {
      figure: 'full sync wall time',
      value: `${(full.ms / 1000).toFixed(1)} s`,
      baseline: `${(base.ms / 1000).toFixed(1)} s (client crawl)`,
      ratio: r2(full.ms / base.ms),
    },
    {
      figure: 'full sync rows/s',
      value: Math.round(fullRps),
      baseline: Math.round(baseRps),
      ratio: r2(fullRps / baseRps),
    },
    {
      figure: 'full sync requests',
      value: full.requests.total,
      baseline: `${bound} (lower bound)`,
      ratio: r2(full.requests.total / bound),
    },
    ...(['tickets', 'threads', 'exports', 'reference'] as const).map((c) => ({
      figure: `  requests: ${c}`,
      value: full.requests[c],
      baseline: base.bound[c],
      ratio: r2(full.requests[c] / base.bound[c]),
    })),
    {
      figure: 'full sync requests/row',
      value: r2(full.requests.total / rowsTotal).toFixed(4),
      baseline: (bound / base.rows).toFixed(4),
      ratio: r2(full.requests.total / rowsTotal / (bound / base.rows)),
    },
    { figure: 'full sync error responses', value: full.requests.errors, baseline: 0, ratio: '' },
    {
      figure: 'full sync pages/s (end to end)',
      value: Math.round(fullPps),
      baseline: Math.round(basePps),
      ratio: r2(fullPps / basePps),
    },
    {
      figure: 'Temporal overhead per page',
      value: ms1(overheadMs),
      baseline: `${ms1(executionMs)} activity execution (API + warehouse)`,
      ratio: r2(overheadMs / executionMs),
    },
    {
      figure: '  of which',
      value: `activity queue ${ms1((temporal.activityScheduleToStart.sum / pages) * 1000)}, workflow task queue ${ms1((temporal.workflowTaskScheduleToStart.sum / pages) * 1000)}, workflow task execution ${ms1((temporal.workflowTaskExecution.sum / pages) * 1000)}`,
      baseline: `${r2(temporal.activityExecution.count / pages)} activities, ${r2(temporal.workflowTaskExecution.count / pages)} workflow tasks per page`,
      ratio: '',
    },
    {
      figure: 'wall time per page',
      value: ms1(full.ms / pages),
      baseline: ms1(base.ms / base.requests),
      ratio: r2(full.ms / pages / (base.ms / base.requests)),
    },
    { figure: 'peak worker RSS (full sync, sampled)', value: mb(fullPeak), baseline: '', ratio: '' },
    ...memory.map((m) => ({
      figure: `  worker at ${Math.round(m.share * 100)}% of requests`,
      value: `RSS ${mb(m.rss)} (peak so far ${mb(m.peakSoFar)})`,
      baseline: `main thread V8 heap used ${mb(m.heapUsed)} of ${mb(m.heapTotal)}`,
      ratio: `${m.requests} requests, ${Math.round(m.elapsedMs / 1000)} s`,
    })),
    { figure: 'peak worker RSS (VmHWM, whole bench)', value: mb(workerHwm), baseline: '', ratio: '' },
    {
      figure: 'incremental, no changes, PT24H: wall',
      value: `${(noChange.ms / 1000).toFixed(1)} s`,
      baseline: '',
      ratio: '',
    },
    {
      figure: 'incremental, no changes, PT24H: requests',
      value: noChange.requests.total,
      baseline: `threads ${noChange.requests.threads} (tickets created in the last 24 h: ${recentTickets})`,
      ratio: JSON.stringify(noChange.requests),
    },
    {
      figure: 'incremental, no changes, PT0S: wall',
      value: `${(noChangeNoLookback.ms / 1000).toFixed(1)} s`,
      baseline: '',
      ratio: '',
    },
    {
      figure: 'incremental, no changes, PT0S: requests',
      value: noChangeNoLookback.requests.total,
      baseline: `threads ${noChangeNoLookback.requests.threads}`,
      ratio: JSON.stringify(noChangeNoLookback.requests),
    },
  ];
  console.log(
    `bench:pipeline — ${tickets} tickets, seed ${values.seed}, rate limits off, thread concurrency ${baseSettings.threadConcurrency}, page size ${baseSettings.pageSize}, export window ${baseSettings.windowMs / DAY_MS} d, start ${startDate.slice(0, 10)}`,
  );
  console.table(table);
  results = {
    tickets,
    fullMs: Math.round(full.ms),
    rows: rowsTotal,
    rowsPerSecond: Math.round(fullRps),
    baselineRowsPerSecond: Math.round(baseRps),
    requests: full.requests,
    lowerBound: { ...base.bound, total: bound },
    requestsPerRow: full.requests.total / rowsTotal,
    pages,
    pagesPerSecond: Math.round(fullPps),
    baselinePagesPerSecond: Math.round(basePps),
    temporalOverheadMsPerPage: r2(overheadMs),
    activityExecutionMsPerPage: r2(executionMs),
    temporal,
    memory: memory.map((m) => ({
      share: m.share,
      requests: m.requests,
      rssMb: Math.round(m.rss / 2 ** 20),
      peakSoFarMb: Math.round(m.peakSoFar / 2 ** 20),
      heapUsedMb: Math.round(m.heapUsed / 2 ** 20),
      heapTotalMb: Math.round(m.heapTotal / 2 ** 20),
    })),
    workerNodeOptions: process.env['BENCH_WORKER_NODE_OPTIONS'] ?? null,
    peakRssMb: Math.round(fullPeak / 2 ** 20),
    hwmMb: Math.round(workerHwm / 2 ** 20),
    noChange: { ms: Math.round(noChange.ms), requests: noChange.requests },
    noChangeNoThreadLookback: {
      ms: Math.round(noChangeNoLookback.ms),
      requests: noChangeNoLookback.requests,
    },
    fullSummary: full.summary.totals,
  };
  console.log(JSON.stringify(results));
} finally {
  await worker.stop();
  await db.end();
  await services.stop();
  await companion.stop();
}
