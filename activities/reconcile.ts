import { z } from 'zod';
import { currentTicketsMatching, isComputableCondition } from '../connectors/queries/saved-views.js';
import { ViewFilter } from '../schemas/api/index.js';
import type { ReconcileInput, ReconcileSummary } from '../schemas/reconcile.js';
import { byText, type ReconciliationRecord } from '../schemas/warehouse.js';
import { readState } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';
import { PAGE_FETCHERS } from './fetchers.js';
import { TIE_OUT_METRICS } from './tie-out/metrics.js';
import { DAY_MS, dayOf, days, type TieOutWindow, wholePeriod } from './tie-out/periods.js';
import { readApi } from './tie-out/read-api.js';
import { readWarehouse } from './tie-out/read-warehouse.js';
import { syncedStreams } from './tie-out/synced-streams.js';

/** Ticket columns a saved-view condition compares (spec 2.4 leaves the filter structure open; see views.ts). */
const REPORT_NOTE =
  'A difference is a warning: report data can be incomplete or awaiting update (spec 2.11 rule 3), a change ' +
  'after the sync read the source arrives next run, or the warehouse misses or holds extra rows.';

/** Why a restricted key's report numbers are not compared (spec 4.12). */
const restrictedNote = (detail: string) =>
  `not like-for-like: the report API answers within the key's agent's channel, team and agent restrictions ` +
  `(spec 4.12: ${detail}), the warehouse holds every ticket; a key without restrictions compares them`;

const VIEW_NOTE =
  "the view's count (synced this run) vs current tickets matching its filters in the warehouse. A count can " +
  'lag the inbox by seconds (spec 2.4) and tickets can change between the two reads: a warning, not an error.';

/**
 * After a run that synced tickets: compares what the warehouse holds with the source's own numbers and
 * records each comparison in `_reconciliation`.
 *  - the tie-out (tie-out/): every metric the BI views compute that the report API serves, per UTC day
 *    for the `days` complete days before the run's upper bound and that day so far, medians and averages
 *    also per whole period, `backlog_now` now — a few report queries (analytics class: this activity runs
 *    on the analytics task queue) against two warehouse queries. Each row's note says the rule that makes
 *    the numbers comparable. A difference the warehouse cannot close (events before its history began,
 *    definitions the spec leaves open) is `explained`, with why. When the key's report access is restricted
 *    (`reportAccess`, spec 4.12), the rows are `skipped` with the reason and both numbers;
 *  - each saved view's `count` (as synced this run) against the current tickets matching its filters —
 *    only where every filter is a plain comparison of a ticket column; others are recorded as `skipped`
 *    with the reason, never guessed;
 *  - a mismatch is read again at the source (settleMoving): one the source moved under is `moving`.
 * A mismatch is recorded with its context and returned as a warning; it never fails the run.
 */
export function reconcile(deps: ActivityDeps) {
  return async (input: ReconcileInput): Promise<ReconcileSummary> => {
    const { client, destination } = deps;
    const checkedAt = (deps.now?.() ?? new Date()).toISOString();
    const rows: ReconciliationRecord[] = [];
    const base = { run_id: input.runId, checked_at: checkedAt };

    // The tie-out: the `days` complete UTC days before the day of `before`, that day so far, and the whole
    // range for medians and averages.
    const todayMs = Date.UTC(...utcYmd(input.before));
    const window: TieOutWindow = { fromMs: todayMs - input.days * DAY_MS, todayMs };
    const access = input.reportAccess;
    const [api, held] = [await readApi(client, window), await readWarehouse(destination, window)] as const;
    const synced = await syncedStreams(destination);
    const historyDay = held.historyStartedAt === null ? null : dayOf(held.historyStartedAt);
    const periods = [...days(window), wholePeriod(window), 'now'];
    for (const [metric, spec] of TIE_OUT_METRICS) {
      const refusal = api.refused.get(metric);
      if (refusal !== undefined) {
        rows.push({
          ...base,
          metric,
          period: wholePeriod(window),
          source_value: null,
          warehouse_value: held.numbers.get(metric)?.get(wholePeriod(window)) ?? null,
          status: 'skipped',
          note: `${metric}: the report API refused the query (${refusal}); nothing to compare`,
        });
        continue;
      }
      for (const period of periods) {
        const source = api.numbers.get(metric)?.get(period);
        if (source === undefined) continue;
        const warehouse = held.numbers.get(metric)?.get(period) ?? 0;
        const values = { metric, period, source_value: source, warehouse_value: warehouse };
        if (access?.restricted === true) {
          rows.push({ ...base, ...values, status: 'skipped', note: restrictedNote(access.detail) });
          continue;
        }
        if (spec.needs !== undefined && !synced.has(spec.needs)) {
          rows.push({
            ...base,
            ...values,
            warehouse_value: null,
            status: 'skipped',
            note: `${metric}: the warehouse number comes from ${spec.needs}, which this warehouse has not synced yet (a run that selects it compares it)`,
          });
          continue;
        }
        const unknown = access?.restricted === null ? ` Report access not known: ${access.detail}.` : '';
        const rule = `${metric}: report API (UTC) vs warehouse ${spec.rule}${spec.tolerance > 0 ? ` Equal within ${spec.tolerance}.` : ''}`;
        if (Math.abs(source - warehouse) <= spec.tolerance) {
          rows.push({ ...base, ...values, status: 'equal', note: rule });
          continue;
        }
        // Before the history began, fewer events in the warehouse is what it cannot know.
        const beforeHistory =
          spec.fromHistory !== undefined &&
          warehouse < source &&
          (historyDay === null || (period.length === 10 && period <= historyDay));
        const why = beforeHistory ? spec.fromHistory : spec.cannotEqual;
        if (why !== undefined) {
          rows.push({ ...base, ...values, status: 'explained', note: `${rule} Cannot be equal: ${why}.` });
          continue;
        }
        rows.push({ ...base, ...values, status: 'mismatch', note: `${rule} ${REPORT_NOTE}${unknown}` });
      }
    }

    // Saved views' counts, where the filters can be computed in the warehouse.
    const views = input.views ? await savedViews(destination) : [];
    const computed = views.filter((v): v is SavedView & { filters: ViewFilter[] } => 'filters' in v);
    const viewCounts =
      computed.length === 0
        ? []
        : await currentTicketsMatching(
            destination,
            computed.map((v) => v.filters),
          );
    for (const v of views) {
      if (!('filters' in v)) {
        rows.push({
          ...base,
          metric: v.metric,
          period: 'now',
          source_value: v.sourceValue,
          warehouse_value: null,
          status: 'skipped',
          note: `${v.skipped}; the filter structure is not in the spec (2.4), so the warehouse does not guess`,
        });
        continue;
      }
      const held = viewCounts[computed.indexOf(v)] ?? 0;
      const equal = held === v.sourceValue;
      rows.push({
        ...base,
        metric: v.metric,
        period: 'now',
        source_value: v.sourceValue,
        warehouse_value: held,
        status: equal ? 'equal' : 'mismatch',
        note: equal ? null : VIEW_NOTE,
      });
    }

    await settleMoving(deps, rows, window);
    await destination.bookkeeping.recordReconciliation(rows);
    return summaryOf(rows);
  };
}

/** The summary's counts and its first few mismatches, one line each naming metric, period and both numbers. */
export function summaryOf(rows: readonly ReconciliationRecord[]): ReconcileSummary {
  const count = (status: ReconciliationRecord['status']) => rows.filter((r) => r.status === status).length;
  const mismatches = rows.filter((r) => r.status === 'mismatch');
  return {
    equal: count('equal'),
    mismatch: mismatches.length,
    skipped: count('skipped'),
    moving: count('moving'),
    explained: count('explained'),
    mismatches: mismatches
      .slice(0, 10)
      .map((r) => `${r.metric} ${r.period}: source ${r.source_value}, warehouse ${r.warehouse_value}`),
  };
}

/**
 * Mismatches against a source that moves: the source's numbers are read again after the comparison (the
 * report queries whose metrics differ, the saved views once). A number that changed between the two reads,
 * or whose new value is the warehouse's, moved while the sync read it: `moving`, with both readings. One
 * that holds still and differs stays a mismatch.
 */
async function settleMoving(
  deps: ActivityDeps,
  rows: ReconciliationRecord[],
  window: TieOutWindow,
): Promise<void> {
  const open = rows.filter((r) => r.status === 'mismatch');
  if (open.length === 0) return;
  const reportMetrics = new Set(open.filter((r) => TIE_OUT_METRICS.has(r.metric)).map((r) => r.metric));
  const again =
    reportMetrics.size > 0 ? (await readApi(deps.client, window, reportMetrics)).numbers : new Map();
  const viewsAgain = open.some((r) => r.metric.startsWith(VIEW_METRIC_PREFIX))
    ? await currentViewCounts(deps)
    : new Map<string, number>();
  for (const r of open) {
    const later = r.metric.startsWith(VIEW_METRIC_PREFIX)
      ? viewsAgain.get(r.metric)
      : again.get(r.metric)?.get(r.period);
    if (later === undefined || r.source_value === null) continue;
    const tolerance = TIE_OUT_METRICS.get(r.metric)?.tolerance ?? 0;
    const moved = Math.abs(later - r.source_value) > tolerance;
    const caughtUp = r.warehouse_value !== null && Math.abs(later - r.warehouse_value) <= tolerance;
    if (!moved && !caughtUp) continue;
    r.status = 'moving';
    r.note =
      `${r.note ?? ''} Moving: the source read ${r.source_value} during the comparison and ${later} after it` +
      (caughtUp ? ', which is the warehouse number: the reads straddled a change' : '') +
      '; the next run compares again.';
  }
  // A period still open (the run's day, the whole range, now) also takes what the source did after the
  // sync read it and before the comparison: when the source shows such changes, its mismatches are moving.
  const today = dayOf(window.todayMs);
  const stillOpen = rows.filter(
    (r) =>
      r.status === 'mismatch' &&
      (r.period === 'now' || r.period === today || r.period === wholePeriod(window)),
  );
  if (stillOpen.length === 0) return;
  const living = await changesAfterTheRead(deps, viewsAgain);
  if (living === null) return;
  for (const r of stillOpen) {
    r.status = 'moving';
    r.note = `${r.note ?? ''} Moving: the period is still open and ${living}; the next run compares again.`;
  }
}

/**
 * What the source changed after the sync read it, if it shows any: among its newest tickets (one list page),
 * those whose updated_at is later than the sweep's start and than the version the warehouse holds; else
 * saved views whose count moved since the run synced it. Null: no change seen.
 */
async function changesAfterTheRead(
  deps: ActivityDeps,
  viewsNow: ReadonlyMap<string, number>,
): Promise<string | null> {
  const { destination } = deps;
  const sweep = await readState(destination, { kind: 'sweep' });
  const readFrom = sweep?.high_water_mark ? Date.parse(sweep.high_water_mark) : null;
  if (readFrom !== null) {
    const page = await PAGE_FETCHERS.tickets(deps.client, { limit: 50 }, null);
    const items = page.items as { id: string; updated_at: string }[];
    const stored = await destination.storedVersions(
      'tickets',
      items.map((t) => t.id),
    );
    const changed = items.filter((t) => {
      const at = Date.parse(t.updated_at);
      const held = stored.get(t.id)?.version;
      return at > readFrom && (held == null || Date.parse(held) < at);
    });
    if (changed.length > 0)
      return `${changed.length} of the source's ${items.length} newest tickets changed after the sync read them`;
  }
  const views = viewsNow.size > 0 ? viewsNow : await currentViewCounts(deps);
  for (const v of await savedViews(destination)) {
    const now = views.get(v.metric);
    if (now !== undefined && now !== v.sourceValue)
      return `the saved view "${v.metric.slice(VIEW_METRIC_PREFIX.length)}" counted ${v.sourceValue} when synced and ${now} now`;
  }
  return null;
}

const VIEW_METRIC_PREFIX = 'view_count:';

/** The saved views' counts as the source serves them now (one listing, outside the run's sync). */
async function currentViewCounts(deps: ActivityDeps): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let cursor: string | null = null;
  do {
    const page = await PAGE_FETCHERS.views(deps.client, { limit: 100 }, cursor);
    for (const item of page.items as { name?: unknown; count?: unknown }[])
      if (typeof item.name === 'string' && typeof item.count === 'number')
        counts.set(`${VIEW_METRIC_PREFIX}${item.name}`, item.count);
    cursor = page.hasMore ? page.nextCursor : null;
  } while (cursor !== null);
  return counts;
}

/** A saved view as synced: its count, and its filters when the warehouse can compute them, else why not. */
type SavedView = { metric: string; sourceValue: number } & ({ filters: ViewFilter[] } | { skipped: string });

async function savedViews(destination: ActivityDeps['destination']): Promise<SavedView[]> {
  // A whole small table: read without a query where the warehouse can (liveRows), ordered here.
  const views = (await destination.liveRows('views', ['name', 'count', 'filters'])).sort((a, b) =>
    byText(String(a['name']), String(b['name'])),
  );
  return views.map((v) => {
    const filters = parseFilters(v['filters']);
    const base = { metric: `${VIEW_METRIC_PREFIX}${String(v['name'])}`, sourceValue: Number(v['count']) };
    const unsupported = filters?.find((f) => !isComputableCondition(f.condition));
    if (filters !== null && !unsupported) return { ...base, filters };
    return {
      ...base,
      skipped: unsupported
        ? `filter condition "${unsupported.condition}" is not a plain ticket column`
        : 'its filters are not of the structure the warehouse can compute',
    };
  });
}

function utcYmd(iso: string): [number, number, number] {
  const d = new Date(iso);
  return [d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()];
}

/** The view's filters when they have the structure the companion serves (spec 2.4: not shown), else null. */
function parseFilters(value: unknown): ViewFilter[] | null {
  const parsed = typeof value === 'string' ? JSON.parse(value) : value;
  const filters = z.array(ViewFilter).safeParse(parsed ?? []);
  return filters.success ? filters.data : null;
}
