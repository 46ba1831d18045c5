/**
 * Benchmark: does every route class use its whole budget when it is the one that binds? (issue 22)
 *
 *   npm run bench:classes -- [--worlds analytics,detail,list] [--window-ms 60000] [--workers 1,3]
 *                            [--analytics-tickets 20] [--detail-tickets 600] [--list-tickets 6000]
 *                            [--years 2] [--streams a,b] [--trace] [--no-peer] [--seed 7]
 *
 * The companion enforces the spec's limits (list 60, detail 120, analytics 10, directory 60) per
 * `--window-ms` (the spec's minute by default; compress it for a quicker look, knowing that the budget's
 * margin before each reset costs more of a short window) and the key's budget workflow spends it per the
 * same window. Three worlds, each bound by one class:
 *  - analytics: few tickets, exports from `--years` back (every pass, every 90-day window);
 *  - detail: more tickets (one thread request each), a year of exports;
 *  - list: many tickets listed without their threads or exports (tickets and the reference streams).
 * For each world and fleet size (worker processes on one key, `npm run worker`):
 *  1. the first sync: wall time; per class its requests (the companion's log), lower bound (requests /
 *     limit × window), share of its budget (requests / (limit × wall / window)), 429s; the ratio of the
 *     wall time to the binding class's lower bound;
 *  2. a no-change incremental run with the rolling thread re-read off: the requests any run must make,
 *     and their lower bound; then one with the default re-read: its wall time over that lower bound, and
 *     how many threads it re-read;
 *  3. the peer (bench/support/page-loop-peer.ts): a plain sequential page loop over the same streams and
 *     windows on a fresh companion of the same world (once per world); support-sync's first sync over the
 *     peer's time.
 * `--trace` also prints the analytics class's pacing: the gaps between its requests' arrivals, how often
 * two were in flight at once, and from the export windows' histories each page's schedule → start →
 * complete (and the next page's schedule after it).
 * os.loadavg() is printed with the figures (the machine is shared: re-run a figure taken under load).
 * The last stdout line is one JSON object with every figure.
 */
import os from 'node:os';
import { DEFAULT_LIMITS, type RequestLogEntry, startCompanion } from '../companion/index.js';
import { QUEUED_ROUTE_CLASSES, type QueuedRouteClass } from '../schemas/config.js';
import type { SyncSettings } from '../schemas/run-input.js';
import { ALL_STREAMS, EXPORT_STREAMS, REFERENCE_STREAMS, type StreamName } from '../schemas/streams.js';
import { analyticsTrace } from './support/analytics-trace.js';
import {
  benchFlags,
  log,
  routeClassOf,
  type Services,
  startServices,
  syncTarget,
  timedSync,
} from './support/harness.js';
import { pageLoopPeer } from './support/page-loop-peer.js';
import { startWorkerProcess, type WorkerProcess } from './support/worker-process.js';

const USAGE =
  'npm run bench:classes -- [--worlds analytics,detail,list] [--window-ms 60000] [--workers 1,3] [--analytics-tickets 20] [--detail-tickets 600] [--list-tickets 6000] [--years 2] [--streams a,b] [--trace] [--no-peer] [--seed 7]';
const values = benchFlags(USAGE, {
  worlds: { type: 'string', default: 'analytics,detail,list' },
  'window-ms': { type: 'string', default: '60000' },
  workers: { type: 'string', default: '1,3' },
  'analytics-tickets': { type: 'string', default: '20' },
  'detail-tickets': { type: 'string', default: '600' },
  'list-tickets': { type: 'string', default: '6000' },
  years: { type: 'string', default: '2' },
  trace: { type: 'boolean', default: false },
  'no-peer': { type: 'boolean', default: false },
  streams: { type: 'string' },
});
/** `--streams`: read only these (every world), e.g. `agent_sessions` for one export pass left alone. */
const onlyStreams = values.streams?.split(',') as StreamName[] | undefined;
const windowMs = Number(values['window-ms']);
const fleetSizes = values.workers.split(',').map(Number);
const DAY_MS = 24 * 60 * 60 * 1000;
const EXPORT_WINDOW_MS = 90 * DAY_MS;

interface World {
  name: 'analytics' | 'detail' | 'list';
  tickets: number;
  streams: StreamName[];
  exportDays: number;
}
const WORLDS: Record<World['name'], World> = {
  analytics: {
    name: 'analytics',
    tickets: Number(values['analytics-tickets']),
    streams: [...ALL_STREAMS],
    exportDays: Math.round(Number(values.years) * 365),
  },
  detail: {
    name: 'detail',
    tickets: Number(values['detail-tickets']),
    streams: [...ALL_STREAMS],
    exportDays: 365,
  },
  list: {
    name: 'list',
    tickets: Number(values['list-tickets']),
    streams: ['tickets', ...REFERENCE_STREAMS],
    exportDays: 365,
  },
};

const limitOf = (c: QueuedRouteClass) => DEFAULT_LIMITS[c];
const load = () =>
  os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

interface ClassFigures {
  requests: number;
  rateLimited: number;
  lowerBoundMs: number;
  share: number;
}

/** Per queued class: requests, 429s, lower bound and share of the budget over `wallMs`. */
function classFigures(entries: readonly RequestLogEntry[], wallMs: number) {
  const out = {} as Record<QueuedRouteClass, ClassFigures>;
  for (const c of QUEUED_ROUTE_CLASSES) {
    const mine = entries.filter((e) => routeClassOf(e) === c);
    const requests = mine.filter((e) => e.status !== 429).length;
    out[c] = {
      requests,
      rateLimited: mine.length - requests,
      lowerBoundMs: (requests / limitOf(c)) * windowMs,
      share: requests / ((limitOf(c) * wallMs) / windowMs),
    };
  }
  return out;
}

const binding = (classes: Record<QueuedRouteClass, ClassFigures>) =>
  QUEUED_ROUTE_CLASSES.reduce((a, b) => (classes[a].lowerBoundMs >= classes[b].lowerBoundMs ? a : b));

async function measure(services: Services, world: World, size: number) {
  const label = `${world.name}/${size}`;
  const companionOptions = {
    seed: Number(values.seed),
    tickets: world.tickets,
    rateLimits: true,
    rateLimitWindowMs: windowMs,
  };
  const exportsFrom = new Date(Date.now() - world.exportDays * DAY_MS).toISOString();
  const companion = await startCompanion(companionOptions);
  const taskQueue = `bench-classes-${world.name}-${size}`;
  const target = await syncTarget(services, companion, {
    database: `bench_classes_${world.name}_${size}`,
    taskQueue,
    env: {
      SUPPORT_API_RATE_WINDOW: `PT${windowMs / 1000}S`,
      SYNC_START_DATE: exportsFrom,
      LOG_LEVEL: 'warn',
    },
  });
  const workers: WorkerProcess[] = [];
  const run = (what: string, settings?: Partial<SyncSettings>) =>
    timedSync(services, target, `${label} ${what}`, {
      streams: world.streams,
      ...(settings ? { settings } : {}),
    });
  try {
    for (let i = 0; i < size; i++)
      workers.push(await startWorkerProcess({ ...target.env, LOG_LEVEL: 'info' }, log));
    companion.clearRequestLog();
    const loadBefore = load();
    await freshWindow(windowMs);
    const firstStarted = Date.now();
    const first = await run('first sync');
    const firstLog = [...companion.requestLog];
    const firstEdges = requestEdges(firstLog, firstStarted, first.ms);
    const classes = classFigures(firstLog, first.ms);
    const bound = binding(classes);
    const trace = values.trace
      ? await analyticsTrace(services.temporal.client, first.summary.workflow_id, firstLog)
      : undefined;
    log(
      `${label}: first sync ${(first.ms / 1000).toFixed(1)} s, bound by ${bound}; first request after ${(firstEdges.firstAfterMs / 1000).toFixed(1)} s, run ended ${(firstEdges.tailMs / 1000).toFixed(1)} s after the last; load ${load()}`,
    );

    companion.clearRequestLog();
    await freshWindow(windowMs);
    const necessary = await run('no-change, no re-read', { threadReverifyPerRun: 0 });
    const necessaryClasses = classFigures(companion.requestLog, necessary.ms);
    const necessaryBound = Math.max(...QUEUED_ROUTE_CLASSES.map((c) => necessaryClasses[c].lowerBoundMs));
    companion.clearRequestLog();
    await freshWindow(windowMs);
    const noChange = await run('no-change');
    const noChangeClasses = classFigures(companion.requestLog, noChange.ms);
    const reread = noChangeClasses.detail.requests - necessaryClasses.detail.requests;
    log(
      `${label}: no-change run ${(noChange.ms / 1000).toFixed(1)} s (lower bound ${(necessaryBound / 1000).toFixed(1)} s, ${reread} detail requests re-reading)`,
    );
    const loadAfter = load();
    return {
      world: world.name,
      tickets: world.tickets,
      workers: size,
      firstMs: Math.round(first.ms),
      edges: firstEdges,
      classes,
      binding: bound,
      ratio: Number((first.ms / classes[bound].lowerBoundMs).toFixed(3)),
      rateLimited: QUEUED_ROUTE_CLASSES.reduce((n, c) => n + classes[c].rateLimited, 0),
      noChange: {
        ms: Math.round(noChange.ms),
        necessaryMs: Math.round(necessary.ms),
        lowerBoundMs: Math.round(necessaryBound),
        ratio: Number((noChange.ms / necessaryBound).toFixed(3)),
        rereadRequests: reread,
        rateLimited: QUEUED_ROUTE_CLASSES.reduce((n, c) => n + noChangeClasses[c].rateLimited, 0),
      },
      load: { before: loadBefore, after: loadAfter },
      ...(trace ? { trace } : {}),
      peer: async () => {
        const fresh = await startCompanion(companionOptions);
        try {
          await freshWindow(windowMs);
          const peerStarted = Date.now();
          const peerMs = await pageLoopPeer(fresh, {
            streams: world.streams,
            exportsFrom,
            windowMs: EXPORT_WINDOW_MS,
          });
          const requests = fresh.requestLog.length;
          const rateLimited = fresh.requestLog.filter((e) => e.status === 429).length;
          const edges = requestEdges(fresh.requestLog, peerStarted, peerMs);
          log(
            `${label}: peer ${(peerMs / 1000).toFixed(1)} s (${requests} requests, ${rateLimited} 429s); ended ${(edges.tailMs / 1000).toFixed(1)} s after its last request`,
          );
          return { ms: Math.round(peerMs), requests, rateLimited, edges };
        } finally {
          await fresh.stop();
        }
      },
    };
  } finally {
    for (const w of workers) await w.stop();
    await companion.stop();
  }
}

/**
 * When a run's requests reached the API, relative to the run: the first after its start, and how long the
 * run went on after the last (writing, the audit, the run's bookkeeping) — where a run that spends the same
 * windows as the peer loses or wins its seconds.
 */
function requestEdges(
  log: readonly RequestLogEntry[],
  startedAt: number,
  ms: number,
): { firstAfterMs: number; tailMs: number } {
  const times = log.map((e) => Date.parse(e.at));
  if (times.length === 0) return { firstAfterMs: 0, tailMs: 0 };
  return {
    firstAfterMs: Math.round(Math.min(...times) - startedAt),
    tailMs: Math.round(startedAt + ms - Math.max(...times)),
  };
}

/**
 * Waits for the companion's next rate window (fixed, aligned to multiples of the window on the real clock).
 * Every measured run and the peer start as a window opens: where a run starts in its first window decides
 * how much of that window's budget it gets (a loop spends a partial window whole), so runs compared with
 * each other start at the same phase. And the no-change runs follow other runs on the same key, whose last
 * requests may have spent the window they start in, while a scheduled run starts long after the previous
 * one, with every class's budget whole.
 */
async function freshWindow(windowMs: number): Promise<void> {
  const wait = windowMs - (Date.now() % windowMs) + 300;
  await new Promise((resolve) => setTimeout(resolve, wait));
}

const worlds = values.worlds.split(',').map((w) => {
  const world = WORLDS[w as World['name']];
  if (!world) throw new Error(`unknown world ${w} (analytics, detail, list)`);
  return onlyStreams ? { ...world, streams: onlyStreams } : world;
});
const services = await startServices();
const results = [];
try {
  for (const world of worlds) {
    let peerFigures: Awaited<ReturnType<Awaited<ReturnType<typeof measure>>['peer']>> | null | undefined;
    for (const size of fleetSizes) {
      const { peer, ...figures } = await measure(services, world, size);
      // The peer is one process whatever the fleet: measured once per world.
      peerFigures ??= values['no-peer'] ? null : await peer();
      results.push({
        ...figures,
        peer: peerFigures,
        overPeer: peerFigures ? Number((figures.firstMs / peerFigures.ms).toFixed(3)) : null,
      });
    }
  }
} finally {
  await services.stop();
}

console.log(
  `bench:classes — seed ${values.seed}, the spec's limits per ${windowMs} ms; load average now ${load()}`,
);
for (const r of results) {
  console.log(
    `\n${r.world}-bound world (${r.tickets} tickets), ${r.workers} worker process(es); load ${r.load.before} → ${r.load.after}`,
  );
  console.log(
    `first sync ${(r.firstMs / 1000).toFixed(1)} s = ${r.ratio} × the ${r.binding} class's lower bound; 429s ${r.rateLimited}` +
      (r.peer
        ? `; peer (sequential page loop) ${(r.peer.ms / 1000).toFixed(1)} s, ${r.peer.rateLimited} 429s: support-sync / peer ${r.overPeer}`
        : ''),
  );
  console.log(
    `after the last request: support-sync ${(r.edges.tailMs / 1000).toFixed(1)} s (writes, audit, bookkeeping)` +
      (r.peer ? `, peer ${(r.peer.edges.tailMs / 1000).toFixed(1)} s` : ''),
  );
  console.table(
    QUEUED_ROUTE_CLASSES.map((c) => ({
      class: c,
      requests: r.classes[c].requests,
      'limit/window': limitOf(c),
      'lower bound (s)': (r.classes[c].lowerBoundMs / 1000).toFixed(1),
      share: r.classes[c].share.toFixed(3),
      '429s': r.classes[c].rateLimited,
    })),
  );
  console.log(
    `no-change run ${(r.noChange.ms / 1000).toFixed(1)} s = ${r.noChange.ratio} × its lower bound ${(r.noChange.lowerBoundMs / 1000).toFixed(1)} s (the same run without the re-read: ${(r.noChange.necessaryMs / 1000).toFixed(1)} s); ${r.noChange.rereadRequests} detail requests re-reading threads; 429s ${r.noChange.rateLimited}`,
  );
  if (r.trace) console.log(`analytics pacing: ${JSON.stringify(r.trace)}`);
}
console.log(
  JSON.stringify({
    windowMs,
    seed: Number(values.seed),
    exportStreams: EXPORT_STREAMS,
    loadavg: os.loadavg(),
    results,
  }),
);
