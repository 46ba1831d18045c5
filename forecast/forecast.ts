import { planRun } from '../activities/bookkeeping.js';
import { readState } from '../activities/checkpoints.js';
import { UNPAGINATED_STREAMS } from '../activities/fetchers.js';
import { TIE_OUT_QUERIES } from '../activities/tie-out/queries.js';
import { liveRowCount } from '../connectors/queries/row-counts.js';
import type { SupportApiClient } from '../connectors/support-api/index.js';
import type { AuditUnit } from '../schemas/audit.js';
import { AUDIT_TABLE_NAMES, AUDIT_TABLES } from '../schemas/audit.js';
import { type Config, QUEUED_ROUTE_CLASSES, type QueuedRouteClass } from '../schemas/config.js';
import type { Forecast, ForecastItem } from '../schemas/forecast.js';
import { HISTORY_MARGIN_MS, type SyncMode } from '../schemas/run-input.js';
import {
  EXPORT_STREAMS,
  REFERENCE_STREAMS,
  STREAMS,
  type StreamName,
  streamOfPass,
  THREADS_STREAM,
} from '../schemas/streams.js';
import { settingsFromConfig } from '../worker/config.js';
import { forecastAudit } from './audit.js';
import { forecastExports, pagesOf, passBasis } from './exports.js';
import { oldestCreatedAt, type SweptPage, sweepTicketList } from './sweep.js';
import { targetOf } from './target.js';
import { forecastTickets } from './tickets.js';
import { classBudgets, expectedMs, wallTime } from './wall-time.js';
import type { ForecastReads } from './warehouse-reads.js';

export type ForecastMode = Exclude<SyncMode, 'replay'>;

export interface ForecastRequest {
  config: Config;
  /** A client of the key the run will use: the sweep and the probes spend its list and analytics budget. */
  client: SupportApiClient;
  /** The warehouse, read only (forecast/warehouse-reads.ts). */
  reads: ForecastReads;
  mode: ForecastMode;
  streams: StreamName[];
  range?: { from: string; before: string };
  /** A backfill re-reads the windows an earlier one completed, too. */
  force?: boolean;
  now: Date;
  /** Progress of the sweep (it can take a while: 6,000 tickets a minute at the spec's list limit). */
  onSweepPage?: (pages: number, tickets: number) => void;
}

/**
 * The forecast of the run `sync --once` (or `--full-refresh`, or `backfill`) would make now: its plan comes
 * from the run's own planner (`planRun`, reading the warehouse's checkpoints), its ticket pages and threads
 * from one sweep of the ticket list judged by the run's own rules, its export windows from the same window
 * planner, their pages estimated (forecast/exports.ts); then requests per route class, the wall time at the
 * key's limits and the budget left to other clients (forecast/wall-time.ts). It writes nothing.
 */
export async function makeForecast(request: ForecastRequest): Promise<Forecast> {
  const { config, client, reads, mode, streams, range } = request;
  const settings = settingsFromConfig(config, request.now);
  const before = range?.before ?? request.now.toISOString();
  const planInput = { mode, streams, settings, now: before, ...(range ? { range } : {}) };
  const plan = await planRun({ destination: reads })(planInput);

  const exportsWanted = EXPORT_STREAMS.some((s) => streams.includes(s));
  const pages: SweptPage[] =
    streams.includes('tickets') || exportsWanted
      ? await sweepTicketList(client, settings.pageSize, request.onSweepPage)
      : [];
  const oldest = oldestCreatedAt(pages);

  // As the run does once its first sweep has found where the history starts: the exports planned from it.
  // So does a pass whose cover waits for the sweep (FIRST_READ_COVERED_BY): the forecast's sweep found it.
  let { passes, historyStart } = plan;
  const sweepDecides =
    (historyStart === null && !range && exportsWanted) || passes.some((p) => p.coverPending);
  if (sweepDecides && oldest !== null) {
    historyStart ??= new Date(Date.parse(oldest) - HISTORY_MARGIN_MS).toISOString();
    passes = (
      await planRun({ destination: reads })({
        ...planInput,
        settings: { ...settings, startDate: historyStart },
        oldestTicket: oldest,
      })
    ).passes;
  }

  const tickets = await forecastTickets({
    reads,
    pages,
    plan: plan.tickets,
    mode,
    settings,
    before,
    withThreads: streams.includes(THREADS_STREAM),
  });
  const swept = pages.flatMap((p) => p.tickets);
  const exports = await forecastExports({
    reads,
    client,
    passes,
    historyStart,
    activity: {
      tickets: swept,
      span: oldest ? { from: Date.parse(oldest), before: Date.parse(before) } : null,
    },
    pageSize: settings.pageSize,
    includeComments: settings.csatIncludeComments,
    skipSucceeded: mode === 'backfill' && request.force !== true,
  });

  const queries = streams.includes('report_snapshots') ? (settings.reportQueries?.length ?? 0) : 0;
  const items: ForecastItem[] = preflightItems(streams, queries, tickets.listed > 0);
  for (const stream of REFERENCE_STREAMS.filter((s) => streams.includes(s))) {
    const { pages: n, basis } = await referencePages(reads, stream, settings.pageSize);
    items.push({
      source: stream,
      route_class: STREAMS[stream].routeClass,
      what: `${stream}: ${n} page(s)`,
      requests: n,
      at_least: 1,
      basis,
    });
  }
  if (plan.tickets) {
    const listPages = tickets.headPages + tickets.sweepPages;
    items.push({
      source: 'tickets',
      route_class: STREAMS.tickets.routeClass,
      what:
        `tickets: ${listPages} list page(s), ${tickets.listed} tickets` +
        (tickets.headPages > 0 ? ` (head pass ${tickets.headPages}, sweep ${tickets.sweepPages})` : ''),
      requests: listPages,
      at_least: listPages,
      basis: `counted by this plan's sweep (${pages.length} pages of ${settings.pageSize})`,
    });
  }
  const threads = tickets.threads;
  if (threads) {
    items.push({
      source: THREADS_STREAM,
      route_class: STREAMS[THREADS_STREAM].routeClass,
      what:
        `${THREADS_STREAM}: ${threads.queuedByListing} thread(s) queued by the listing, ${threads.queuedBefore} queued ` +
        `before or unsettled, ${threads.reverifyMin} of the rolling re-read`,
      requests: threads.requests,
      at_least: threads.requests,
      basis:
        "the run's queueing rule against the stored versions; one request per thread page of 100 messages",
    });
  }
  for (const pass of exports.passes) {
    const requests = pass.windows.reduce((n, w) => n + w.pages, 0);
    const covered = pass.covered_by ? `its first read is ${pass.covered_by}'s (FIRST_READ_COVERED_BY); ` : '';
    const how =
      pass.windows.length === 0 && pass.covered_by
        ? 'no request of its own'
        : pass.windows.some((w) => w.basis === 'warehouse')
          ? 'rows the warehouse holds per window, the rest at their density'
          : pass.probe
            ? `one probe page: ${pass.probe.items} item(s) ${pass.probe.complete ? 'in' : 'in the start of'} ${pass.probe.window_start}/${pass.probe.window_end}, per ${passBasis(pass.pass) === 'days' ? 'day' : 'ticket'} elsewhere`
            : 'no activity in its windows: one page each';
    items.push({
      source: pass.pass,
      route_class: STREAMS[streamOfPass(pass.pass)].routeClass,
      what: `${pass.pass}: ${pass.windows.length} window(s)${pass.skipped ? ` (${pass.skipped} done before, skipped)` : ''}, ~${pass.windows.reduce((n, w) => n + w.items, 0)} items`,
      requests,
      at_least: pass.windows.length,
      basis: `${covered}estimated: ${how}`,
    });
  }
  if (queries > 0) {
    items.push({
      source: 'report_snapshots',
      route_class: STREAMS.report_snapshots.routeClass,
      what: `report_snapshots: ${queries} saved report queries`,
      requests: queries,
      at_least: 0,
      basis: 'one POST /reports/query each (none when taken at this time already)',
    });
  }
  if (plan.tickets) {
    items.push(
      {
        source: 'reconciliation',
        route_class: 'detail',
        what: "reconciliation: the key's identity (GET /me), what the report API answers within",
        requests: 1,
        at_least: 0,
        basis: 'after a run whose tickets succeeded',
      },
      {
        source: 'reconciliation',
        route_class: 'analytics',
        what: "reconciliation: the tie-out's report queries (every daily metric in one data table, a KPI per period metric, the backlog now)",
        requests: TIE_OUT_QUERIES,
        at_least: 0,
        basis:
          'after a run whose tickets succeeded; a query the API refuses, or a number that differs, is asked again',
      },
    );
  }

  const exportRows = (pass: string) =>
    exports.passes
      .filter((p) => p.pass === pass)
      .reduce((n, p) => n + p.windows.reduce((m, w) => m + w.items, 0), 0);
  items.push(
    ...(await forecastAudit({
      config,
      mode,
      streams,
      reads,
      // A window-audited table holds about what its audited pass reads; threads follow their tickets.
      expectedRows: Object.fromEntries(
        AUDIT_TABLE_NAMES.map((table) => {
          const unit: AuditUnit = AUDIT_TABLES[table];
          return [table, unit.pass === undefined ? swept.length : exportRows(unit.pass)];
        }),
      ),
    })),
  );

  const { budgets, from } = classBudgets(config);
  const perClass = sumByClass(items);
  // The rolling re-read goes on beyond its minimum while the run's other streams are busy (the detail
  // budget would idle): about the detail queue's dispatch over their time, as far as threads allow.
  if (threads && threads.reverifyMore > 0 && from === 'configured') {
    const othersMs = Math.max(
      ...QUEUED_ROUTE_CLASSES.map((c) =>
        expectedMs(sumByClass(items.filter(isOtherLane))[c].requests, budgets[c]),
      ),
    );
    const capacity = Math.floor((othersMs / 1000) * budgets.detail.dispatchPerSecond);
    const more = Math.min(threads.reverifyMore, Math.max(0, capacity - perClass.detail.requests));
    if (more > 0) {
      items.push({
        source: THREADS_STREAM,
        route_class: STREAMS[THREADS_STREAM].routeClass,
        what: `${THREADS_STREAM}: ${more} more thread(s) of the rolling re-read while other streams run`,
        requests: more,
        at_least: 0,
        basis: "the detail queue's dispatch over the other streams' expected time",
      });
      perClass.detail.requests += more;
    }
  }
  const { classes, binding, wall } = wallTime(perClass, budgets);
  const firstSync =
    mode === 'incremental' &&
    (await readState(reads, { kind: 'high_water_mark', stream: 'tickets' })) === null;
  const cost = Object.fromEntries(QUEUED_ROUTE_CLASSES.map((c) => [c, 0])) as Record<
    QueuedRouteClass,
    number
  >;
  cost[STREAMS.tickets.routeClass] += pages.length;
  cost.analytics += exports.probes;
  return {
    made_at: request.now.toISOString(),
    mode,
    kind: firstSync ? 'first sync (whole history)' : KIND[mode],
    streams,
    range: range ?? null,
    target: targetOf(config),
    settings: {
      page_size: settings.pageSize,
      window_ms: settings.windowMs,
      lookback_ms: settings.lookbackMs,
      thread_lookback_ms: settings.threadLookbackMs,
      thread_reverify_per_run: settings.threadReverifyPerRun,
      limits_from: from,
    },
    tickets: {
      listed: tickets.listed,
      list_pages: tickets.headPages + tickets.sweepPages,
      oldest_created_at: oldest,
      threads: threads?.requests ?? 0,
    },
    history_start: historyStart,
    passes: exports.passes,
    items,
    classes,
    binding,
    wall,
    cost,
  };
}

const KIND: Record<ForecastMode, string> = {
  incremental: 'incremental run',
  full_refresh: 'full refresh',
  backfill: 'backfill',
};

/**
 * The run's lanes besides tickets and threads (reference lists, export passes, report snapshots): while
 * they are busy the rolling re-read goes on. Not the preflight, the reconciliation nor the audit (after every
 * lane).
 */
const isOtherLane = (item: ForecastItem) =>
  !['tickets', THREADS_STREAM, 'preflight', 'reconciliation', 'audit'].includes(item.source);

function sumByClass(
  items: readonly ForecastItem[],
): Record<QueuedRouteClass, { requests: number; atLeast: number }> {
  const out = Object.fromEntries(QUEUED_ROUTE_CLASSES.map((c) => [c, { requests: 0, atLeast: 0 }])) as Record<
    QueuedRouteClass,
    { requests: number; atLeast: number }
  >;
  for (const item of items) {
    out[item.route_class].requests += item.requests;
    out[item.route_class].atLeast += item.at_least;
  }
  return out;
}

/** Pages of a reference list: its rows in the warehouse over the page size, or one when none is stored. */
async function referencePages(
  reads: ForecastReads,
  stream: (typeof REFERENCE_STREAMS)[number],
  pageSize: number,
): Promise<{ pages: number; basis: string }> {
  if (UNPAGINATED_STREAMS.includes(stream)) return { pages: 1, basis: 'one unpaginated answer' };
  const rows = await liveRowCount(reads, [STREAMS[stream].table]);
  if (rows === null) return { pages: 1, basis: 'nothing stored yet: one page, more if the list is longer' };
  return { pages: pagesOf(rows, pageSize), basis: `${rows} rows in the warehouse` };
}

/**
 * The preflight before every run (cli/preflight/probes.ts): one request per selected stream, in its class, as
 * the run makes it. The newest ticket is read once for tickets and threads (one list page of one); a thread
 * only when the workspace has a ticket; report snapshots only with saved queries.
 */
function preflightItems(
  streams: readonly StreamName[],
  reportQueries: number,
  hasTicket: boolean,
): ForecastItem[] {
  const probe = (stream: StreamName, what: string): ForecastItem => ({
    source: 'preflight',
    route_class: STREAMS[stream].routeClass,
    what: `preflight: ${what}`,
    requests: 1,
    at_least: 1,
    basis: 'every run: one request per selected stream',
  });
  const items: ForecastItem[] = [];
  for (const stream of streams) {
    if (stream === THREADS_STREAM) {
      if (hasTicket) items.push(probe(stream, 'one thread page of the newest ticket'));
    } else if (stream === 'report_snapshots') {
      if (reportQueries > 0) items.push(probe(stream, 'the smallest report query'));
    } else if (stream !== 'tickets') items.push(probe(stream, `one page of ${stream} (limit 1)`));
  }
  if (streams.includes('tickets') || streams.includes(THREADS_STREAM))
    items.push(probe('tickets', 'the newest ticket (GET /tickets, limit 1)'));
  return items;
}
