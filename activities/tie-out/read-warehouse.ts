import { STREAMS } from '../../schemas/streams.js';
import type { SqlDialect } from '../../schemas/warehouse-views.js';
import type { ActivityDeps } from '../deps.js';
import { CSAT_AVERAGE } from './metrics.js';
import {
  DAY_MS,
  dayOf,
  days,
  type MetricValues,
  putValue,
  type TieOutWindow,
  wholePeriod,
} from './periods.js';

const median = (values: number[]): number => {
  if (values.length === 0) return 0;
  const v = [...values].sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
};

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
const instant = (v: unknown) => (v === null || v === undefined ? null : Date.parse(String(v)));

/** The warehouse's side: two queries (daily counts and sums; the per-ticket rows medians need). */
export async function readWarehouse(
  destination: ActivityDeps['destination'],
  w: TieOutWindow,
): Promise<{ numbers: MetricValues; historyStartedAt: number | null }> {
  const out: MetricValues = new Map();
  const from = new Date(w.fromMs).toISOString();
  const rows = await destination.select((d) => dailySql(d, from));
  let historyStartedAt: number | null = null;
  for (const r of rows) {
    const metric = String(r['metric']);
    if (metric === 'history_start') {
      historyStartedAt = instant(r['value_at']);
      continue;
    }
    putValue(out, metric, String(r['period']), Number(r['value'] ?? 0));
  }
  // Averages: the sum and count of scores per day and over the period.
  const scoreSums = out.get('csat_score_sum') ?? new Map<string, number>();
  const responses = out.get('csat_responses') ?? new Map<string, number>();
  let total = 0;
  let n = 0;
  for (const day of days(w)) {
    const c = responses.get(day) ?? 0;
    const s = scoreSums.get(day) ?? 0;
    putValue(out, 'csat_average', day, c === 0 ? 0 : s / c);
    total += s;
    n += c;
  }
  putValue(out, 'csat_average', wholePeriod(w), n === 0 ? 0 : total / n);
  out.delete('csat_score_sum');

  // Medians per day and per period, from per-ticket rows (the API's median: the middle, or the mean of the
  // two middles).
  const facts = await destination.select(
    (d) => `SELECT first_reply_at, first_response_seconds, first_human_reply_at, first_human_response_seconds,
  resolved_at, resolution_seconds FROM ${d.table('ticket_facts')}
  WHERE first_reply_at >= ${d.timestamp(from)} OR first_human_reply_at >= ${d.timestamp(from)} OR resolved_at >= ${d.timestamp(from)}`,
  );
  const pick: Record<string, [string, string]> = {
    customer_first_response_time: ['first_reply_at', 'first_response_seconds'],
    human_first_response_time: ['first_human_reply_at', 'first_human_response_seconds'],
    full_resolution_time: ['resolved_at', 'resolution_seconds'],
  };
  const end = w.todayMs + DAY_MS;
  for (const [metric, [atCol, valueCol]] of Object.entries(pick)) {
    const byDay = new Map<string, number[]>();
    const all: number[] = [];
    for (const f of facts) {
      const at = instant(f[atCol]);
      const v = num(f[valueCol]);
      if (at === null || v === null || at < w.fromMs || at >= end) continue;
      const list = byDay.get(dayOf(at)) ?? [];
      list.push(v);
      byDay.set(dayOf(at), list);
      all.push(v);
    }
    for (const day of days(w)) putValue(out, metric, day, median(byDay.get(day) ?? []));
    putValue(out, metric, wholePeriod(w), median(all));
  }
  return { numbers: out, historyStartedAt };
}

/** Daily counts and sums in one statement (BigQuery bills every query at least 10 MB per table). */
function dailySql(d: SqlDialect, fromIso: string): string {
  const from = d.timestamp(fromIso);
  const day = (ts: string) => d.utcDay(ts);
  const live = `(SELECT id FROM ${d.table('current_tickets')})`;
  // The surveys are the table of the stream the CSAT metrics need.
  const csat = `${d.table(STREAMS[CSAT_AVERAGE.needs].table)} s WHERE s.${d.ident('_deleted_at')} IS NULL AND s.score IS NOT NULL AND s.submitted_at >= ${from}`;
  const period = (metric: string, dayExpr: string, value: string, fromWhere: string) =>
    `SELECT '${metric}' AS metric, ${dayExpr} AS period, CAST(${value} AS ${d.type('float')}) AS value, CAST(NULL AS ${d.type('timestamp')}) AS value_at ${fromWhere} GROUP BY ${dayExpr}`;
  return [
    period(
      'new_tickets',
      day('t.created_at'),
      'COUNT(*)',
      `FROM ${d.table('current_tickets')} t WHERE t.created_at >= ${from}`,
    ),
    period(
      'resolved_tickets',
      day('r.resolved_at'),
      'COUNT(DISTINCT r.ticket_id)',
      `FROM ${d.table('ticket_resolutions')} r WHERE r.resolved_at >= ${from} AND r.ticket_id IN ${live}`,
    ),
    period(
      'reopened_tickets',
      day('h.valid_from'),
      'COUNT(DISTINCT h.ticket_id)',
      `FROM ${d.table('ticket_history')} h WHERE h.is_reopen AND h.valid_from >= ${from} AND h.ticket_id IN ${live}`,
    ),
    ...['tickets_replied_to', 'answered_tickets'].map((metric) =>
      period(
        metric,
        day('m.created_at'),
        'COUNT(DISTINCT m.ticket_id)',
        `FROM ${d.table('current_messages')} m WHERE m.role <> 'customer' AND m.created_at >= ${from}`,
      ),
    ),
    period('csat_responses', day('s.submitted_at'), 'COUNT(*)', `FROM ${csat}`),
    period('csat_score_sum', day('s.submitted_at'), 'SUM(s.score)', `FROM ${csat}`),
    `SELECT 'agent_online_time' AS metric, a.day AS period, CAST(SUM(a.online_seconds) AS ${d.type('float')}) AS value, CAST(NULL AS ${d.type('timestamp')}) AS value_at FROM ${d.table('agent_online_daily')} a WHERE a.day >= ${d.string(fromIso.slice(0, 10))} GROUP BY a.day`,
    `SELECT 'backlog_now' AS metric, 'now' AS period, CAST(COUNT(*) AS ${d.type('float')}) AS value, CAST(NULL AS ${d.type('timestamp')}) AS value_at FROM ${d.table('current_tickets')} t WHERE t.status IN ('open', 'need_more_info')`,
    `SELECT 'history_start' AS metric, 'all' AS period, CAST(NULL AS ${d.type('float')}) AS value, MIN(o.observed_at) AS value_at FROM ${d.table('ticket_observations')} o`,
  ].join('\nUNION ALL\n');
}
