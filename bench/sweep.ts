/**
 * Benchmark of the change sweep (issue 10, architecture decision 4): what an incremental run with no changes
 * costs on a large workspace, against its lower bound, and how long the sweep of the whole ticket list takes
 * under the spec's list limit.
 *
 *   npm run bench:sweep -- [--tickets 20000] [--seed 7] [--window-ms 10000]
 *
 * Set-up: a companion world (rate limits off for the initial sync), an embedded PostgreSQL, a Temporal dev
 * server and in-process workers; an initial sync with default settings (whole history).
 *
 * Figures:
 *  1. A no-change incremental run (rolling thread re-read off, thread look-back PT0S, no audit): requests per route
 *     class (from the companion's request log) against the lower bound of a run that finds nothing new:
 *        list      = ceil(live tickets / 100)                the sweep: every page, once
 *                  + pages of GET /views + 1 (metric catalog)  reference snapshots
 *        directory = pages of GET /tags, /teams, /agents       reference snapshots
 *        analytics = Σ over export passes of the pages of the windows the look-back touches
 *                    ([high-water mark − SYNC_LOOKBACK, now), at 100 per page, at least 1 per window)
 *                  + 1                                       the run's reconciliation (one report query,
 *                                                            issue 13), printed apart
 *        detail    = 0                                         nothing changed, so no thread
 *                  + 1                                       the key's report access before the
 *                                                            reconciliation (GET /me, issue 23)
 *     and its wall time. Ratio = requests / lower bound (target ≤ 1.05).
 *  2. The same run with the defaults (thread look-back PT24H, SYNC_THREAD_REVERIFY_PER_RUN): the detail
 *     requests are the by-design re-reads, reported beside their count.
 *  3. The sweep's time under the spec's list limit (60 requests a minute): computed as pages / 60 min, and
 *     measured: a tickets-only run against the companion with the spec's limits compressed in time
 *     (`--window-ms`, default 10000: 60 list requests per 10 s; much shorter windows would measure the
 *     sequential page latency, not the limit), scaled back by 60000 / window-ms.
 * The last stdout line is one JSON object with every figure.
 */

import pg from 'pg';
import { readState } from '../activities/checkpoints.js';
import { startCompanion } from '../companion/index.js';
import { fetchAgentSessionsPage, fetchCsatPage, planWindows } from '../connectors/support-api/index.js';
import type { SyncSettings } from '../schemas/run-input.js';
import { ALL_STREAMS, EXPORT_PASSES, type StreamName } from '../schemas/streams.js';
import { auditRequestsOf } from '../worker/config.js';
import {
  benchFlags,
  crawl,
  log,
  pagesAt100,
  requestsByClass,
  routeClassOf,
  sourceClient,
  startInProcessWorkers,
  startServices,
  sum,
  syncTarget,
  timedSync,
} from './support/harness.js';

const values = benchFlags('npm run bench:sweep -- [--tickets 20000] [--seed 7] [--window-ms 10000]', {
  tickets: { type: 'string', default: '20000' },
  'window-ms': { type: 'string', default: '10000' },
});
const tickets = Number(values.tickets);
const windowMs = Number(values['window-ms']);

log(`generating a ${tickets}-ticket world`);
const companion = await startCompanion({ seed: Number(values.seed), tickets, rateLimits: false });
const taskQueue = 'bench-sweep';
const services = await startServices();
const target = await syncTarget(services, companion, {
  database: 'bench_sweep',
  taskQueue,
  env: { SUPPORT_API_RATE_LIMITS: 'off', LOG_LEVEL: 'silent' },
});
const { config } = target;
const workers = await startInProcessWorkers(services, target);
const db = new pg.Client({ connectionString: target.databaseUrl });
await db.connect();
const client = sourceClient(companion);

async function run(
  label: string,
  overrides: Partial<SyncSettings>,
  streams: StreamName[] = [...ALL_STREAMS],
) {
  companion.clearRequestLog();
  const { ms } = await timedSync(services, target, label, { settings: overrides, streams });
  log(`${label}: ${(ms / 1000).toFixed(1)} s, ${companion.requestLog.length} requests`);
  return { ms, requests: requestsByClass(companion.requestLog), log: [...companion.requestLog] };
}

/** Pages the export passes must read when nothing changed: the windows their look-back touches. */
async function analyticsLowerBound(now: string): Promise<number> {
  let pages = 0;
  for (const pass of [...EXPORT_PASSES.csat_surveys, ...EXPORT_PASSES.agent_sessions]) {
    const mark = (await readState(workers.deps.destination, { kind: 'high_water_mark', stream: pass }))
      ?.high_water_mark;
    if (!mark) throw new Error(`${pass} has no high-water mark`);
    const from = new Date(Date.parse(mark) - config.SYNC_LOOKBACK).toISOString();
    for (const w of planWindows({ from, to: now, maxWindowMs: config.SYNC_WINDOW })) {
      const range = { from: w.windowStart, before: w.windowEnd, limit: 100 };
      const items = sum(
        await crawl<unknown>((cursor) =>
          pass === 'agent_sessions'
            ? fetchAgentSessionsPage(client, { ...range, cursor })
            : fetchCsatPage(client, {
                ...range,
                cursor,
                by: pass === 'csat_surveys.sent' ? 'sent' : 'submitted',
                includeComments: true,
              }),
        ),
      );
      pages += pagesAt100(items);
    }
  }
  return pages;
}

try {
  const initial = await run('initial sync (defaults: whole history)', {});
  const live = Number(
    (await db.query('SELECT count(*) AS n FROM support.tickets WHERE _deleted_at IS NULL')).rows[0].n,
  );
  const reference = async (table: string) =>
    pagesAt100(Number((await db.query(`SELECT count(*) AS n FROM support.${table}`)).rows[0].n));

  const analyticsBound = await analyticsLowerBound(new Date().toISOString());
  const bound = {
    list: Math.ceil(live / 100) + (await reference('views')) + 1,
    directory: (await reference('tags')) + (await reference('teams')) + (await reference('agents')),
    // The reconciliation after each run that synced tickets: one report query (activities/reconcile.ts).
    analytics: analyticsBound + 1,
    // Nothing changed, so no thread; the key's report access before the reconciliation (GET /me).
    detail: 1,
  };
  // The sync's own cost: without the audit's share either (SYNC_AUDIT_SHARE: it re-reads a sample of rows
  // after the run by design; the run with the defaults below has it).
  const noChange = await run('no-change run (re-read off, thread look-back PT0S, no audit)', {
    threadReverifyPerRun: 0,
    threadLookbackMs: 0,
    auditRequests: {},
  });
  const defaults = await run('no-change run (defaults)', {});
  const recent = Number(
    (
      await db.query(
        `SELECT count(*) AS n FROM support.tickets WHERE _deleted_at IS NULL AND created_at >= now() - $1::interval`,
        [`${config.SYNC_THREAD_LOOKBACK / 1000} seconds`],
      )
    ).rows[0].n,
  );

  // The sweep under the spec's list limit, compressed in time.
  companion.setOptions({ rateLimits: true, rateLimitWindowMs: windowMs });
  const sweep = await run(
    'tickets-only run, compressed limits',
    { threadReverifyPerRun: 0, threadLookbackMs: 0, auditRequests: {} },
    ['tickets'],
  );
  companion.setOptions({ rateLimits: false });
  const sweepPages = sweep.requests.list;
  const scale = 60_000 / windowMs;
  const rateLimited = sweep.log.filter((e) => e.status === 429).length;

  const ratio = (a: number, b: number) => (b === 0 ? (a === 0 ? 1 : Number.POSITIVE_INFINITY) : a / b);
  const classes = ['list', 'directory', 'analytics', 'detail'] as const;
  const total = (r: Record<string, number>) => classes.reduce((s, c) => s + (r[c] ?? 0), 0);
  const boundTotal = total(bound);
  console.log(
    `bench:sweep — ${tickets} tickets (${live} live), seed ${values.seed}; initial sync ${(initial.ms / 1000).toFixed(1)} s (rate limits off)`,
  );
  console.table(
    classes.map((c) => ({
      class: c,
      'no-change run': noChange.requests[c],
      'lower bound': bound[c],
      ratio: ratio(noChange.requests[c], bound[c]).toFixed(3),
      'with defaults': defaults.requests[c],
    })),
  );
  const analyticsByEndpoint = new Map<string, number>();
  for (const e of noChange.log) {
    if (routeClassOf(e) !== 'analytics') continue;
    const endpoint = `${e.method} ${e.path}`;
    analyticsByEndpoint.set(endpoint, (analyticsByEndpoint.get(endpoint) ?? 0) + 1);
  }
  console.log(
    `no-change run, analytics: ${[...analyticsByEndpoint].map(([k, n]) => `${k} ${n}`).join(', ')} (bound: ${analyticsBound} export pages + 1 reconciliation query)`,
  );
  console.log(
    `no-change run: ${total(noChange.requests)} requests / lower bound ${boundTotal} = ${ratio(total(noChange.requests), boundTotal).toFixed(3)}; wall ${(noChange.ms / 1000).toFixed(1)} s (rate limits off)`,
  );
  console.log(
    `with defaults: detail ${defaults.requests.detail} = threads of the ${recent} tickets created in the last ${config.SYNC_THREAD_LOOKBACK / 3_600_000} h + the rolling re-read (SYNC_THREAD_REVERIFY_PER_RUN ${config.SYNC_THREAD_REVERIFY_PER_RUN}, more while other streams run) + the audit's share (SYNC_AUDIT_SHARE ${config.SYNC_AUDIT_SHARE}: ${JSON.stringify(auditRequestsOf(config) ?? {})} per run)`,
  );
  console.log(
    `sweep of ${live} tickets: ${sweepPages} list requests → ${(sweepPages / 60).toFixed(1)} min at 60/min (computed); measured ${(sweep.ms / 1000).toFixed(1)} s with ${windowMs} ms windows → ${((sweep.ms * scale) / 60_000).toFixed(1)} min at the real pace; ${rateLimited} 429s`,
  );
  console.log(
    JSON.stringify({
      tickets,
      liveTickets: live,
      initialSyncMs: Math.round(initial.ms),
      noChange: { requests: noChange.requests, ms: Math.round(noChange.ms) },
      lowerBound: bound,
      ratio: Number(ratio(total(noChange.requests), boundTotal).toFixed(3)),
      ratioPerClass: Object.fromEntries(
        classes.map((c) => [c, Number(ratio(noChange.requests[c], bound[c]).toFixed(3))]),
      ),
      withDefaults: { requests: defaults.requests, ms: Math.round(defaults.ms), recentTickets: recent },
      sweep: {
        listRequests: sweepPages,
        computedMinutesAtSpecLimit: Number((sweepPages / 60).toFixed(2)),
        measuredMsCompressed: Math.round(sweep.ms),
        windowMs,
        measuredMinutesAtSpecPace: Number(((sweep.ms * scale) / 60_000).toFixed(2)),
        rateLimited,
      },
    }),
  );
} finally {
  await workers.stop();
  await db.end();
  await client.close();
  await services.stop();
  await companion.stop();
}
