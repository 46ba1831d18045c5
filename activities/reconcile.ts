import { z } from 'zod';
import { ViewFilter } from '../schemas/api/index.js';
import type { ReconcileInput, ReconcileSummary } from '../schemas/sync.js';
import { byText, type ReconciliationRecord } from '../schemas/warehouse.js';
import type { SqlDialect } from '../schemas/warehouse-views.js';
import type { ActivityDeps } from './deps.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** Ticket columns a saved-view condition compares (spec 2.4 leaves the filter structure open; see views.ts). */
const VIEW_CONDITION_COLUMNS: Readonly<Record<string, string>> = {
  status: 'status',
  channel: 'channel',
  priority: 'priority',
  team: 'team_id',
  assignee: 'assignee_id',
};

const REPORT_NOTE =
  'report API new_tickets (creation cohort, UTC day) vs warehouse tickets not deleted by created_at UTC day. ' +
  'A difference is a warning: report data can be incomplete or awaiting update (spec 2.11 rule 3), a ticket ' +
  'created after the sync read the list arrives next run, or the warehouse misses or holds extra rows.';

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
 *  - `new_tickets` per UTC day for the `days` complete days before the run's upper bound, from ONE report
 *    query (analytics class: this activity runs on the analytics task queue), against the warehouse's
 *    tickets (not deleted) by created_at day;
 *    When the key's report access is restricted (`reportAccess`, spec 4.12), those are recorded as
 *    `skipped` with the reason and both numbers: they cannot be like-for-like;
 *  - each saved view's `count` (as synced this run) against the current tickets matching its filters —
 *    only where every filter is a plain comparison of a ticket column; others are recorded as `skipped`
 *    with the reason, never guessed.
 * A mismatch is recorded with its context and returned as a warning; it never fails the run.
 */
export function reconcile(deps: ActivityDeps) {
  return async (input: ReconcileInput): Promise<ReconcileSummary> => {
    const { client, destination } = deps;
    const checkedAt = (deps.now?.() ?? new Date()).toISOString();
    const rows: ReconciliationRecord[] = [];
    const record = (r: Omit<ReconciliationRecord, 'run_id' | 'checked_at' | 'status'>) => {
      const equal = r.source_value === r.warehouse_value;
      rows.push({
        ...r,
        run_id: input.runId,
        checked_at: checkedAt,
        status: equal ? 'equal' : 'mismatch',
        note: equal ? null : r.note,
      });
    };

    // new_tickets per day: the `days` complete UTC days before the day of `before`.
    const until = Date.UTC(...utcYmd(input.before));
    const from = until - input.days * DAY_MS;
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const result = await client.queryReport({
      query: [
        'FROM tickets',
        'SHOW new_tickets',
        `SINCE ${day(from)} UNTIL ${day(until - DAY_MS)}`,
        'TIMESERIES day',
        'VISUALIZE new_tickets TYPE line',
      ].join('\n'),
      timezone: 'UTC',
    });
    const reported = new Map<string, number>();
    if (result.kind === 'time-series')
      for (const p of result.points) reported.set(p.date.slice(0, 10), p.values['new_tickets'] ?? 0);
    // The saved views and, in ONE query of the current tickets, their counts and the tickets per created
    // day: on BigQuery every query bills 10 MB at least per table it names, whatever it reads.
    const views = input.views ? await savedViews(destination) : [];
    const computed = views.filter((v): v is SavedView & { filters: ViewFilter[] } => 'filters' in v);
    const held = new Map<string, number>();
    const viewCounts = computed.map(() => 0);
    const fromDay = day(from);
    const untilDay = day(until);
    for (const r of await destination.select(
      (d) =>
        `SELECT ${d.utcDay('created_at')} AS day, COUNT(*) AS n` +
        computed
          .map((v, i) => `, SUM(CASE WHEN ${filterSql(d, v.filters) || '1 = 1'} THEN 1 ELSE 0 END) AS v${i}`)
          .join('') +
        ` FROM ${d.table('current_tickets')} t GROUP BY ${d.utcDay('created_at')}`,
    )) {
      const period = String(r['day']);
      if (period >= fromDay && period < untilDay) held.set(period, Number(r['n']));
      computed.forEach((_, i) => {
        viewCounts[i]! += Number(r[`v${i}`] ?? 0);
      });
    }
    const access = input.reportAccess;
    for (let t = from; t < until; t += DAY_MS) {
      const period = day(t);
      const values = {
        metric: 'new_tickets',
        period,
        source_value: reported.get(period) ?? (result.kind === 'time-series' ? 0 : null),
        warehouse_value: held.get(period) ?? 0,
      };
      if (access?.restricted === true) {
        rows.push({
          ...values,
          run_id: input.runId,
          status: 'skipped',
          note: restrictedNote(access.detail),
          checked_at: checkedAt,
        });
        continue;
      }
      // Not known: compared, and a mismatch says what restrictions would explain.
      const unknown = access?.restricted === null ? ` Report access not known: ${access.detail}.` : '';
      record({ ...values, note: `${REPORT_NOTE}${unknown}` });
    }

    // Saved views' counts, where the filters can be computed in the warehouse.
    for (const v of views) {
      if (!('filters' in v)) {
        rows.push({
          run_id: input.runId,
          metric: v.metric,
          period: 'now',
          source_value: v.sourceValue,
          warehouse_value: null,
          status: 'skipped',
          note: `${v.skipped}; the filter structure is not in the spec (2.4), so the warehouse does not guess`,
          checked_at: checkedAt,
        });
        continue;
      }
      record({
        metric: v.metric,
        period: 'now',
        source_value: v.sourceValue,
        warehouse_value: viewCounts[computed.indexOf(v)] ?? 0,
        note: VIEW_NOTE,
      });
    }

    await destination.recordReconciliation(rows);
    const mismatches = rows.filter((r) => r.status === 'mismatch');
    return {
      equal: rows.filter((r) => r.status === 'equal').length,
      mismatch: mismatches.length,
      skipped: rows.filter((r) => r.status === 'skipped').length,
      mismatches: mismatches
        .slice(0, 10)
        .map((r) => `${r.metric} ${r.period}: source ${r.source_value}, warehouse ${r.warehouse_value}`),
    };
  };
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
    const base = { metric: `view_count:${String(v['name'])}`, sourceValue: Number(v['count']) };
    const unsupported = filters?.find((f) => !(f.condition in VIEW_CONDITION_COLUMNS));
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

/** All filters must hold (the view's saved filters combine with AND). */
function filterSql(d: SqlDialect, filters: readonly ViewFilter[]): string {
  return filters
    .map((f) => {
      const column = `t.${d.ident(VIEW_CONDITION_COLUMNS[f.condition]!)}`;
      const list = f.options.length ? f.options.map((o) => d.string(o)).join(', ') : null;
      if (f.operator === 'is_not')
        return list ? `(${column} IS NULL OR ${column} NOT IN (${list}))` : '1 = 1';
      return list ? `${column} IN (${list})` : '1 = 0';
    })
    .join(' AND ');
}
