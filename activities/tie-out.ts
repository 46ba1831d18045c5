import type { SupportApiClient } from '../connectors/support-api/index.js';
import type { ReportResult } from '../schemas/api/index.js';
import { EXPORT_STREAMS, STREAMS, type StreamOfKind, streamsOfKind } from '../schemas/streams.js';
import type { SqlDialect } from '../schemas/warehouse-views.js';
import { readState } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';

/**
 * The tie-out: every metric the BI views compute that the report API also serves (spec 2.11), per UTC day
 * and, for medians and averages, per period (spec 2.10 rule 5: a period's median is queried, never rebuilt
 * from daily values) — the API's number, the warehouse's, and the rule that makes them comparable.
 */

const DAY_MS = 24 * 60 * 60 * 1000;

/** How the two numbers are compared. */
export interface TieOutMetric {
  readonly id: string;
  /** Largest difference still equal: 0 for counts; float rounding for medians and averages. */
  readonly tolerance: number;
  /** What the warehouse computes, in the API's terms. */
  readonly rule: string;
  /**
   * Known from ticket_history only: on days up to the one the history began (the first sync), the events
   * before the first sighting are not known, so a warehouse number lower than the API's is explained.
   */
  readonly fromHistory?: string;
  /** A difference the warehouse cannot close, with why (definitions the spec leaves open). */
  readonly cannotEqual?: string;
  /** The stream besides tickets the warehouse number comes from: not compared until it has been synced. */
  readonly needs?: FollowerStream;
}

/** Streams a tie-out metric may read besides tickets. */
export type FollowerStream = StreamOfKind<'threads' | 'export'>;

/**
 * Which of those streams this warehouse has ever synced, from their checkpoints: a thread read to the end,
 * an export window's high-water mark. A metric of a stream never synced is skipped, not a mismatch.
 */
export async function syncedStreams(destination: ActivityDeps['destination']): Promise<Set<FollowerStream>> {
  const out = new Set<FollowerStream>();
  // The thread queue serves the threads stream: synced once a thread was read to the end.
  if ((await destination.listThreadQueue({ status: 'complete', limit: 1 })).length > 0) {
    for (const stream of streamsOfKind(STREAMS, 'threads')) out.add(stream);
  }
  // An export is synced once the pass that reads every item (its first) has a high-water mark.
  for (const stream of EXPORT_STREAMS) {
    const pass = STREAMS[stream].passes[0];
    if ((await readState(destination, { kind: 'high_water_mark', stream: pass }))?.high_water_mark)
      out.add(stream);
  }
  return out;
}

const SWEEP =
  'Known at the granularity of the sync schedule: a change and its undoing between two runs leave no trace.';

export const DAILY_COUNTS: readonly TieOutMetric[] = [
  {
    id: 'new_tickets',
    tolerance: 0,
    rule: 'current tickets (not deleted) by created_at UTC day (creation cohort).',
  },
  {
    id: 'resolved_tickets',
    tolerance: 0,
    rule: `distinct current tickets with a resolution that UTC day: a move to resolved in ticket_history, or the ticket's current resolved_at (view ticket_resolutions). ${SWEEP}`,
    fromHistory:
      'on the days up to the first sync, a resolution undone by a reopen before the ticket was first synced is not known (the API has no events feed and a reopen clears resolved_at)',
  },
  {
    id: 'reopened_tickets',
    tolerance: 0,
    rule: `distinct current tickets with a move from resolved/closed to open/need_more_info in ticket_history that UTC day (is_reopen, dated by valid_from). ${SWEEP}`,
    fromHistory:
      'on the days up to the first sync, reopens before the ticket was first synced are not known (the API has no events feed)',
  },
  {
    id: 'tickets_replied_to',
    needs: 'ticket_messages',
    tolerance: 0,
    rule: 'distinct current tickets with a public thread item not by the customer (current_messages, role agent or ai) created that UTC day.',
  },
  {
    id: 'answered_tickets',
    needs: 'ticket_messages',
    tolerance: 0,
    rule: 'as tickets_replied_to: distinct current tickets with a reply by an agent or AI that UTC day.',
    cannotEqual:
      'the API counts only replies attributed to an agent (spec 2.11); message reads carry author_name but no author id (spec 2.3), so an unattributed reply cannot be told apart in the warehouse',
  },
  {
    id: 'csat_responses',
    needs: 'csat_surveys',
    tolerance: 0,
    rule: 'scored CSAT surveys (csat_surveys, not deleted, score and submitted_at set) by submitted_at UTC day.',
  },
];

export const DAILY_DURATIONS: readonly TieOutMetric[] = [
  {
    id: 'customer_first_response_time',
    needs: 'ticket_messages',
    tolerance: 0.001,
    rule: 'median of ticket_facts.first_response_seconds over current tickets whose first_reply_at falls in the period (reply event); 0 when none, as the API answers.',
  },
  {
    id: 'human_first_response_time',
    needs: 'ticket_messages',
    tolerance: 0.001,
    rule: 'median of ticket_facts.first_human_response_seconds over current tickets whose first_human_reply_at falls in the period; 0 when none.',
  },
  {
    id: 'full_resolution_time',
    tolerance: 0.001,
    rule: 'median of ticket_facts.resolution_seconds (creation to the current resolution) over tickets resolved or closed now whose resolved_at falls in the period; 0 when none.',
  },
  {
    id: 'agent_online_time',
    needs: 'agent_sessions',
    tolerance: 0.001,
    rule: 'sum of agent_online_daily.online_seconds (sessions clipped to the day, overlaps of one agent counted once, an open session up to its last_activity).',
  },
];

export const CSAT_AVERAGE: TieOutMetric = {
  id: 'csat_average',
  needs: 'csat_surveys',
  tolerance: 1e-6,
  rule: 'mean score of scored CSAT surveys by submitted_at in the period; 0 when none, as the API answers.',
};

export const BACKLOG_NOW: TieOutMetric = {
  id: 'backlog_now',
  tolerance: 0,
  rule: 'current tickets with status open or need_more_info (a snapshot: compared with the warehouse as of the last sweep).',
};

/** Metrics whose period value is a median or an average: queried for the whole period too. */
export const PERIOD_METRICS: readonly TieOutMetric[] = [
  ...DAILY_DURATIONS.filter((m) => m.id !== 'agent_online_time'),
  CSAT_AVERAGE,
];

/** One number of one metric and period from each side. */
export type Numbers = Map<string, Map<string, number>>;

const put = (n: Numbers, metric: string, period: string, value: number) => {
  let m = n.get(metric);
  if (!m) {
    m = new Map();
    n.set(metric, m);
  }
  m.set(period, value);
};

export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The compared periods: each UTC day from `fromMs` through `todayMs`'s day, and the whole range. */
export interface TieOutWindow {
  readonly fromMs: number;
  /** Midnight UTC of the last (current, partial) day. */
  readonly todayMs: number;
}

export const days = (w: TieOutWindow): string[] => {
  const out: string[] = [];
  for (let t = w.fromMs; t <= w.todayMs; t += DAY_MS) out.push(dayOf(t));
  return out;
};

export const wholePeriod = (w: TieOutWindow) => `${dayOf(w.fromMs)}..${dayOf(w.todayMs)}`;

/** The report queries of the API's side: one data table for the days, one KPI per period metric, one for now. */
export function apiQueries(w: TieOutWindow): ApiQuery[] {
  const since = `SINCE ${dayOf(w.fromMs)} UNTIL ${dayOf(w.todayMs)}`;
  const series = (key: string, metrics: readonly TieOutMetric[]): ApiQuery => {
    const ids = metrics.map((m) => m.id);
    return {
      // A metric the key may not see makes the API refuse the whole query: asked again alone.
      ...(metrics.length > 1 ? { alone: metrics.map((m) => series(`${key}:${m.id}`, [m])) } : {}),
      key,
      metrics: ids,
      query: [
        'FROM tickets',
        `SHOW ${ids.join(', ')}`,
        since,
        'TIMESERIES day',
        `VISUALIZE ${ids.join(', ')} TYPE line`,
      ].join('\n'),
    };
  };
  const kpi = (key: string, id: string, during: string) => ({
    key,
    metrics: [id],
    query: ['FROM tickets', `SHOW ${id}`, during, `VISUALIZE ${id} TYPE kpi`].join('\n'),
  });
  const daily = [...DAILY_COUNTS, ...DAILY_DURATIONS, CSAT_AVERAGE];
  const ids = daily.map((m) => m.id);
  return [
    // Every daily metric in one data table by day (one request of the analytics class, 10 a minute); an
    // API that refuses the combination is asked per format, then per metric.
    {
      key: 'daily',
      metrics: ids,
      query: [
        'FROM tickets',
        `SHOW ${ids.join(', ')}`,
        since,
        'GROUP BY day',
        `VISUALIZE ${ids.join(', ')} TYPE data_table`,
      ].join('\n'),
      alone: [
        series('counts', DAILY_COUNTS),
        series('durations', DAILY_DURATIONS),
        series('csat', [CSAT_AVERAGE]),
      ],
    },
    ...PERIOD_METRICS.map((m) => kpi(`period:${m.id}`, m.id, since)),
    kpi('backlog', BACKLOG_NOW.id, 'DURING today'),
  ];
}

/** Report queries a tie-out sends when the API takes each of them (a refusal or a difference asks again). */
export const TIE_OUT_QUERIES = apiQueries({ fromMs: 0, todayMs: DAY_MS }).length;

interface ApiQuery {
  key: string;
  metrics: string[];
  query: string;
  /** The same metrics one query each, for when the API refuses this one. */
  alone?: ApiQuery[];
}

/**
 * Runs the queries (UTC) and files their numbers by metric and period (a day, the whole range, or now). A
 * query the API refuses (a key without the dashboard permission for CSAT …) is not fatal: its metrics are
 * returned in `refused` with the API's message, to be recorded as skipped.
 */
export async function readApi(
  client: SupportApiClient,
  w: TieOutWindow,
  only?: ReadonlySet<string>,
): Promise<{ numbers: Numbers; refused: Map<string, string> }> {
  const out: Numbers = new Map();
  const refused = new Map<string, string>();
  const queue = apiQueries(w);
  for (let q = queue.shift(); q !== undefined; q = queue.shift()) {
    if (only && !q.metrics.some((m) => only.has(m))) continue;
    let result: ReportResult;
    try {
      result = await client.queryReport({ query: q.query, timezone: 'UTC' });
    } catch (err) {
      if (!isRefusal(err)) throw err;
      if (q.alone) queue.unshift(...q.alone);
      else for (const id of q.metrics) refused.set(id, err instanceof Error ? err.message : String(err));
      continue;
    }
    if (result.kind === 'data_table') {
      for (const row of result.rows)
        for (const id of q.metrics) put(out, id, row.key.slice(0, 10), row.values[id] ?? 0);
    } else if (result.kind === 'time-series') {
      for (const p of result.points)
        for (const id of q.metrics) put(out, id, p.date.slice(0, 10), p.values[id] ?? 0);
    } else if (result.kind === 'kpi') {
      const id = q.metrics[0]!;
      put(out, id, q.key === 'backlog' ? 'now' : wholePeriod(w), result.value);
    }
  }
  return { numbers: out, refused };
}

/** An API answer that refuses the query itself (permissions, validation), not a failing service. */
function isRefusal(err: unknown): boolean {
  const status = (err as { status?: unknown }).status;
  return typeof status === 'number' && status >= 400 && status < 500 && status !== 429;
}

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
): Promise<{ numbers: Numbers; historyStartedAt: number | null }> {
  const out: Numbers = new Map();
  const from = new Date(w.fromMs).toISOString();
  const rows = await destination.select((d) => dailySql(d, from));
  let historyStartedAt: number | null = null;
  for (const r of rows) {
    const metric = String(r['metric']);
    if (metric === 'history_start') {
      historyStartedAt = instant(r['value_at']);
      continue;
    }
    put(out, metric, String(r['period']), Number(r['value'] ?? 0));
  }
  // Averages: the sum and count of scores per day and over the period.
  const scoreSums = out.get('csat_score_sum') ?? new Map<string, number>();
  const responses = out.get('csat_responses') ?? new Map<string, number>();
  let total = 0;
  let n = 0;
  for (const day of days(w)) {
    const c = responses.get(day) ?? 0;
    const s = scoreSums.get(day) ?? 0;
    put(out, 'csat_average', day, c === 0 ? 0 : s / c);
    total += s;
    n += c;
  }
  put(out, 'csat_average', wholePeriod(w), n === 0 ? 0 : total / n);
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
    for (const day of days(w)) put(out, metric, day, median(byDay.get(day) ?? []));
    put(out, metric, wholePeriod(w), median(all));
  }
  return { numbers: out, historyStartedAt };
}

/** Daily counts and sums in one statement (BigQuery bills every query at least 10 MB per table). */
function dailySql(d: SqlDialect, fromIso: string): string {
  const from = d.timestamp(fromIso);
  const day = (ts: string) => d.utcDay(ts);
  const live = `(SELECT id FROM ${d.table('current_tickets')})`;
  const csat = `${d.table('csat_surveys')} s WHERE s.${d.ident('_deleted_at')} IS NULL AND s.score IS NOT NULL AND s.submitted_at >= ${from}`;
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

/** Every metric compared, with its rule, by id. */
export const TIE_OUT_METRICS: ReadonlyMap<string, TieOutMetric> = new Map(
  [...DAILY_COUNTS, ...DAILY_DURATIONS, CSAT_AVERAGE, BACKLOG_NOW].map((m) => [m.id, m]),
);
