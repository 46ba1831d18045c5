import { type RunPlan, succeededWindows } from '../activities/bookkeeping.js';
import { readState } from '../activities/checkpoints.js';
import { PAGE_FETCHERS } from '../activities/fetchers.js';
import { liveRowsPerDay } from '../connectors/queries/row-counts.js';
import type { SupportApiClient } from '../connectors/support-api/index.js';
import { EXPORT_PAGE_LIMIT } from '../schemas/api/exports.js';
import type { ForecastPass, ForecastWindow } from '../schemas/forecast.js';
import { type ExportPass, STREAMS } from '../schemas/streams.js';
import type { TableName } from '../schemas/warehouse.js';
import { windowWorkflowId } from '../schemas/workflow-names.js';
import type { PassForecast } from '../streams/define.js';
import type { SweptTicket } from './sweep.js';
import type { ForecastReads } from './warehouse-reads.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** How a pass's items are placed in time and counted (its stream's `forecast`), and the table holding them. */
interface PassCounting extends PassForecast {
  readonly table: TableName;
}

const PASS_COUNTING = Object.fromEntries(
  Object.values(STREAMS).flatMap((s) =>
    s.kind === 'export'
      ? Object.entries(s.passDefinitions).map(([pass, definition]) => [
          pass,
          {
            ...definition.forecast,
            table: s.table,
          } satisfies PassCounting,
        ])
      : [],
  ),
) as Readonly<Record<ExportPass, PassCounting>>;

/** What a pass's volume follows between windows: the tickets created or the calendar. */
export function passBasis(pass: ExportPass): PassForecast['basis'] {
  return PASS_COUNTING[pass].basis;
}

interface Range {
  readonly from: number;
  readonly before: number;
}
const overlapMs = (a: Range, b: Range) =>
  Math.max(0, Math.min(a.before, b.before) - Math.max(a.from, b.from));
const rangeOf = (w: { windowStart: string; windowEnd: string }): Range => ({
  from: Date.parse(w.windowStart),
  before: Date.parse(w.windowEnd),
});

/** What the forecast knows of a workspace's volume over time: its tickets' creation times. */
export interface Activity {
  readonly tickets: readonly SweptTicket[];
  /** When the workspace's activity spans: from its oldest ticket to the run's upper bound. */
  readonly span: Range | null;
}

/** A window's share of what a pass's volume follows: its tickets, or its days within the activity span. */
function basisOf(counting: PassCounting, activity: Activity, range: Range): number {
  if (counting.basis === 'days') return activity.span ? overlapMs(range, activity.span) / DAY_MS : 0;
  return activity.tickets.filter((t) => {
    const at = Date.parse(t.created_at);
    return at >= range.from && at < range.before;
  }).length;
}

/**
 * Pages per window of every export pass the run plans, estimated — an export page's count is not known
 * before reading it:
 *  - where the warehouse already holds the pass (from the history start up to its high-water mark): its
 *    rows in the window, by day;
 *  - elsewhere: a density (items per ticket created, or per day) times the window's tickets or days, the
 *    density from the warehouse's covered range, or, with nothing stored, from ONE probe page per pass (at
 *    the API's largest page) over the window with the most activity — exact when that window fits in it,
 *    otherwise extrapolated over the time the page covers.
 * Every window costs at least one request, even when empty.
 */
export async function forecastExports(input: {
  reads: ForecastReads;
  client: SupportApiClient;
  passes: RunPlan['passes'];
  historyStart: string | null;
  activity: Activity;
  pageSize: number;
  includeComments: boolean;
  /** A backfill skips the windows an earlier one completed (unless forced). */
  skipSucceeded: boolean;
}): Promise<{ passes: ForecastPass[]; probes: number }> {
  const out: ForecastPass[] = [];
  let probes = 0;
  for (const planned of input.passes) {
    const counting = PASS_COUNTING[planned.pass];
    const ids = planned.windows.map((w) => windowWorkflowId(planned.pass, w.windowStart, w.windowEnd));
    const done = new Set(
      input.skipSucceeded ? await succeededWindows({ destination: input.reads })({ workflowIds: ids }) : [],
    );
    const windows = planned.windows.filter((_, i) => !done.has(ids[i]!));
    const stored = await storedPass(input.reads, planned.pass, counting, input.historyStart);
    const basis = (range: Range) => basisOf(counting, input.activity, range);

    // Items per unit of basis: from what the warehouse holds, else from a probe page.
    let density =
      stored && basis(stored.covered) > 0 ? stored.count(stored.covered) / basis(stored.covered) : null;
    let probe: ForecastPass['probe'] = null;
    let probedItems = 0;
    if (density === null) {
      const candidate = windows
        .filter((w) => !stored || overlapMs(rangeOf(w), stored.covered) === 0)
        .reduce<{ w: (typeof windows)[number]; b: number } | null>((best, w) => {
          const b = basis(rangeOf(w));
          return b > 0 && (!best || b >= best.b) ? { w, b } : best;
        }, null);
      density = 0;
      if (candidate) {
        ({ probe, items: probedItems } = await probeWindow(
          input.client,
          planned.pass,
          candidate.w,
          input.includeComments,
          [...new Set([counting.basis, 'days' as const])].map(
            (b) => (range: Range) => basisOf({ ...counting, basis: b }, input.activity, range),
          ),
        ));
        probes += 1;
        density = probedItems / candidate.b;
      }
    }

    const estimated: ForecastWindow[] = windows.map((w) => {
      const range = rangeOf(w);
      const window = { window_start: w.windowStart, window_end: w.windowEnd };
      if (probe?.window_start === w.windowStart && probe.window_end === w.windowEnd) {
        const items = Math.round(probedItems);
        return {
          ...window,
          items,
          pages: pagesOf(items, input.pageSize),
          basis: probe.complete ? 'probe' : 'density',
        };
      }
      const covered = stored ? overlapMs(range, stored.covered) : 0;
      const known = stored && covered > 0 ? stored.count(range) : 0;
      const rest = basis(range) - (stored && covered > 0 ? basis(intersect(range, stored.covered)) : 0);
      const items = Math.round(known + Math.max(0, rest) * (density ?? 0));
      return {
        ...window,
        items,
        pages: pagesOf(items, input.pageSize),
        basis: covered > 0 ? 'warehouse' : 'density',
      };
    });
    out.push({
      pass: planned.pass,
      windows: estimated,
      skipped: planned.windows.length - windows.length,
      ...(planned.coveredBy ? { covered_by: planned.coveredBy } : {}),
      probe,
    });
  }
  return { passes: out, probes };
}

/** Requests a window of `items` costs: one per page, and one even when empty. */
export function pagesOf(items: number, pageSize: number): number {
  return Math.max(1, Math.ceil(items / pageSize));
}

const intersect = (a: Range, b: Range): Range => ({
  from: Math.max(a.from, b.from),
  before: Math.max(Math.max(a.from, b.from), Math.min(a.before, b.before)),
});

/**
 * The warehouse's rows of a pass by UTC day, over the range it covers (the history start to the pass's
 * high-water mark), or null when it holds none of that pass yet.
 */
async function storedPass(
  reads: ForecastReads,
  pass: ExportPass,
  counting: PassCounting,
  historyStart: string | null,
): Promise<{ covered: Range; count(range: Range): number } | null> {
  const mark = (await readState(reads, { kind: 'high_water_mark', stream: pass }))?.high_water_mark;
  if (!mark || historyStart === null || Date.parse(mark) <= Date.parse(historyStart)) return null;
  const covered = { from: Date.parse(historyStart), before: Date.parse(mark) };
  const days = (await liveRowsPerDay(reads, counting.table, counting.dateColumn)).map((r) => ({
    from: Date.parse(`${r.day}T00:00:00Z`),
    items: r.rows,
  }));
  return {
    covered,
    // A day's items count in proportion to the part of the day the range holds.
    count: (range) => {
      const within = intersect(range, covered);
      return days.reduce(
        (n, day) =>
          n + (day.items * overlapMs(within, { from: day.from, before: day.from + DAY_MS })) / DAY_MS,
        0,
      );
    },
  };
}

/**
 * One page of the pass over the window, at the API's largest page size. Its items are the window's when the
 * page held them all; otherwise the page's items over the part of the window they cover (the export is in
 * ascending date order), stretched to the whole window by each measure of `spreads` — the window's days
 * within the workspace's activity (not the quiet time before its first ticket) and, for surveys, its
 * tickets — and the mean taken. Surveys follow their tickets with a delay: by tickets alone, the start of a
 * window counts the surveys of earlier tickets; by days alone, a growing workspace is denser at its end.
 */
async function probeWindow(
  client: SupportApiClient,
  pass: ExportPass,
  window: { windowStart: string; windowEnd: string },
  includeComments: boolean,
  spreads: readonly ((range: Range) => number)[],
): Promise<{ probe: NonNullable<ForecastPass['probe']>; items: number }> {
  const page = await PAGE_FETCHERS[pass](
    client,
    {
      limit: EXPORT_PAGE_LIMIT.max,
      from: window.windowStart,
      before: window.windowEnd,
      extras: includeComments,
    },
    null,
  );
  const read = page.items.length + page.rejected.length;
  const probe = {
    window_start: window.windowStart,
    window_end: window.windowEnd,
    items: read,
    complete: !page.hasMore,
  };
  if (probe.complete) return { probe, items: read };
  // Sessions that began before the window and overlap it come first, once per window whatever its length:
  // only the items dated inside the window say how densely they follow.
  const range = rangeOf(window);
  const dates = page.rawItems
    .map((item) => item[PASS_COUNTING[pass].dateColumn])
    .map((at) => (typeof at === 'string' ? Date.parse(at) : Number.NaN))
    .filter((at) => at >= range.from);
  const pageRange = { from: range.from, before: (dates.at(-1) ?? range.from) + 1 };
  const stretched = spreads
    .filter((spread) => spread(pageRange) > 0)
    .map((spread) => read - dates.length + (dates.length * spread(range)) / spread(pageRange));
  if (stretched.length === 0) return { probe, items: read };
  return { probe, items: Math.max(read, stretched.reduce((a, b) => a + b, 0) / stretched.length) };
}
