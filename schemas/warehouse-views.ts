import { z } from 'zod';
import { Timestamp } from './api/index.js';
import { HIGH_WATER_MARK_SCOPE } from './state-key.js';
import { ExportPass } from './streams.js';
import { TICKET_HISTORY_VIEWS, ticketHistorySql } from './ticket-history-views.js';
import { type ColumnSpec, type ColumnType, deriveColumns, TABLES } from './warehouse.js';

/**
 * BI-ready views over the synced tables, defined once and rendered for each destination by a small SQL
 * dialect (PostgreSQL, BigQuery). Each destination's prepare() creates or replaces them after its tables,
 * so they follow every migration. The SQL below uses only what both engines share (CTEs, CASE, window
 * functions, COUNT/SUM/MIN/MAX); whatever differs goes through the dialect.
 *
 * Semantics rules of the report API (spec 2.10 rule 5, 2.11) hold for the views too: a period's
 * percentage, median or average is never the sum or mean of daily values; query the period directly.
 */
export interface SqlDialect {
  readonly kind: 'postgres' | 'bigquery';
  /**
   * A table or view of the sync, qualified by schema/dataset: in shared tables (SYNC_WAREHOUSE_LAYOUT), the
   * rows of the workspace the statement is for.
   */
  table(name: string): string;
  /**
   * The table or view itself, every workspace's rows in shared tables (the same as `table` in a schema of
   * one workspace): what DDL and write statements name, and a read that is the deployment's, not a
   * workspace's (the custom fields of every workspace, connectors/custom-field-view.ts).
   */
  target(name: string): string;
  ident(name: string): string;
  /** A string literal. */
  string(value: string): string;
  /** Seconds from `earlier` to `later` (timestamps) as a float, microsecond-exact. */
  secondsBetween(later: string, earlier: string): string;
  /** The UTC calendar day of a timestamp as text `YYYY-MM-DD`. */
  utcDay(timestamp: string): string;
  /** True when a report query's text has a `TIMESERIES day` clause. */
  hasDailyTimeseries(queryText: string): string;
  /** The text before the first "/" (a window workflow id's pass: `csat_surveys.sent/<from>/<before>`). */
  firstPathSegment(text: string): string;
  /** True when a text is a 64-character lowercase hex digest (a value the column policy hashed). */
  isHexDigest(text: string): string;
  /** A timestamp literal. */
  timestamp(iso: string): string;
  /** The type name of a logical column type (for typed NULLs). */
  type(t: ColumnType): string;
  /** A FROM item: the elements of a JSON array as rows, each the JSON value `alias` (none for a non-array). */
  jsonElements(json: string, alias: string): string;
  /** The member `key` (a plain name) of a JSON object, as JSON; null where there is none. */
  jsonMember(json: string, key: string): string;
  /** A JSON string, number or boolean as text; null for anything else. */
  jsonScalarText(json: string): string;
  /**
   * What a JSON value holds, as `ticket_custom_fields` types it: 'number', 'boolean', 'timestamp' (a string
   * that is an ISO date, or an instant with its offset), 'text' (any other string), 'json' (object or list);
   * null for a JSON null or none.
   */
  jsonValueClass(json: string): string;
  /** A JSON value as a column of `type`; null where it does not fit (never an error). */
  jsonAs(json: string, type: ColumnType): string;
  /** The warehouse's clock now (a timestamp expression). */
  readonly now: string;
  /** A timestamp `days` whole days after a timestamp. */
  addDays(timestamp: string, days: number): string;
  /**
   * A SELECT of one column `day_start`: midnight UTC of every day from the UTC day of `from` to that of
   * `to` (timestamps), both included; no rows when either is null.
   */
  daySeries(from: string, to: string): string;
}

/**
 * A string the view types as a timestamp: an ISO date, or a date and time with its UTC offset (so it means
 * one instant wherever it is read). A regular expression both warehouses run.
 */
export const ISO_DATE_OR_INSTANT =
  '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])(T([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9]([.][0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2}))?$';

export interface ViewColumn {
  readonly name: string;
  readonly type: ColumnType;
  readonly description: string;
}

export interface ViewSpec {
  readonly name: string;
  readonly description: string;
  readonly columns: readonly ViewColumn[];
  /** The SELECT of the view; its output columns are `columns`, in order. */
  sql(d: SqlDialect): string;
}

const columnsOf = (table: keyof typeof TABLES, except: readonly string[] = []): ColumnSpec[] =>
  TABLES[table].columns.filter((c) => !except.includes(c.name));

const select = (d: SqlDialect, alias: string, cols: readonly { name: string }[]) =>
  cols.map((c) => `${alias}.${d.ident(c.name)}`).join(', ');

const asView = (cols: readonly ColumnSpec[]): ViewColumn[] =>
  cols.map((c) => ({ name: c.name, type: c.type, description: c.description }));

/**
 * A view's own columns, derived like a table's: a zod object giving each column's type, and a description
 * per column. A view enforces nothing, so the types leave null out (the docs list every view column as
 * nullable).
 */
const viewColumns = (view: string, types: z.ZodObject, descriptions: Readonly<Record<string, string>>) =>
  asView(deriveColumns(view, types, { descriptions }));

// --- current_tickets / current_messages -----------------------------------------------------------------

const ticketColumns = columnsOf('tickets', ['_deleted_at']);
const messageColumns = columnsOf('ticket_messages', ['_deleted_at']);

const currentTickets: ViewSpec = {
  name: 'current_tickets',
  description:
    'Tickets as the source serves them now: every column of `tickets` except `_deleted_at`, only rows not marked deleted.',
  columns: asView(ticketColumns),
  sql: (d) =>
    `SELECT ${select(d, 't', ticketColumns)}\nFROM ${d.table('tickets')} t\nWHERE t.${d.ident('_deleted_at')} IS NULL`,
};

/** Messages not marked deleted whose ticket is not marked deleted either. */
const currentMessagesSql = (d: SqlDialect, cols: readonly { name: string }[]) =>
  `SELECT ${select(d, 'm', cols)}
FROM ${d.table('ticket_messages')} m
WHERE m.${d.ident('_deleted_at')} IS NULL
  AND NOT EXISTS (SELECT 1 FROM ${d.table('tickets')} dt WHERE dt.id = m.ticket_id AND dt.${d.ident('_deleted_at')} IS NOT NULL)`;

const currentMessages: ViewSpec = {
  name: 'current_messages',
  description:
    'Public thread items as the source serves them now: every column of `ticket_messages` except `_deleted_at`, only messages not marked deleted whose ticket is not marked deleted.',
  columns: asView(messageColumns),
  sql: (d) => currentMessagesSql(d, messageColumns),
};

// --- ticket_facts ---------------------------------------------------------------------------------------

const ticketFactsColumns = viewColumns(
  'ticket_facts',
  z.object({
    ticket_id: z.string(),
    ticket_number: z.number().int(),
    created_at: Timestamp,
    status: z.string(),
    channel: z.string(),
    priority: z.string(),
    assignee_id: z.string(),
    team_id: z.string(),
    first_customer_message_at: Timestamp,
    first_reply_at: Timestamp,
    first_response_seconds: z.number(),
    first_human_reply_at: Timestamp,
    first_human_response_seconds: z.number(),
    resolved_at: Timestamp,
    resolution_seconds: z.number(),
    message_count: z.number().int(),
    customer_message_count: z.number().int(),
    reply_count: z.number().int(),
    csat_score: z.number().int(),
    csat_submitted_at: Timestamp,
    reopen_count: z.number().int(),
  }),
  {
    ticket_id: 'Ticket id (joins current_tickets.id).',
    ticket_number: 'Ticket number.',
    created_at: 'When the ticket was created.',
    status: 'Current status.',
    channel: 'Channel of the ticket.',
    priority: 'Current priority.',
    assignee_id: 'Assigned agent id (joins agents.id).',
    team_id: 'Assigned team id (joins teams.id).',
    first_customer_message_at: "The customer's first public message; null when the thread has none.",
    first_reply_at:
      'First public reply by an agent or AI (role not customer) at or after the first customer message — the definition of customer_first_response_time; null when none yet.',
    first_response_seconds:
      'Seconds from the first customer message to first_reply_at. A median over tickets is computed over these rows per period, never from daily medians.',
    first_human_reply_at:
      'First public reply by a human agent (role agent) at or after the first customer message.',
    first_human_response_seconds: 'Seconds from the first customer message to first_human_reply_at.',
    resolved_at:
      'When the ticket was last resolved, while it is resolved or closed (the API clears it when a ticket reopens).',
    resolution_seconds:
      'Seconds from creation to the last resolution, for tickets resolved or closed now; null while open. The time to the *last* resolution (the API exposes no status history).',
    message_count: 'Public thread items (customer, agent and AI) on the ticket.',
    customer_message_count: 'Public messages by the customer.',
    reply_count: 'Public replies by agents and AI.',
    csat_score: 'Score (1–5) of the latest answered CSAT survey of the ticket; null when none was answered.',
    csat_submitted_at: 'When that survey was answered.',
    reopen_count:
      'Reopens the sweeps saw (ticket_history.is_reopen): moves from resolved or closed back to open or need_more_info since the ticket was first synced. The API has no events feed, so reopens before the first sighting, and a reopen and re-resolution between two sweeps, are not counted.',
  },
);

const ticketFacts: ViewSpec = {
  name: 'ticket_facts',
  description:
    'One row per current ticket with the facts BI asks for first: first public reply and first response time, resolution time, message counts, the CSAT score and the reopens the sweeps saw. Derived from current_tickets, current messages, csat_surveys and ticket_history.',
  columns: ticketFactsColumns,
  sql: (d) => {
    const id = (n: string) => d.ident(n);
    return `WITH m AS (
  ${currentMessagesSql(d, [{ name: 'ticket_id' }, { name: 'role' }, { name: 'created_at' }]).replace(/\n/g, '\n  ')}
),
first_customer AS (
  SELECT ticket_id, MIN(created_at) AS first_customer_at FROM m WHERE role = 'customer' GROUP BY ticket_id
),
thread AS (
  SELECT m.ticket_id,
    COUNT(*) AS message_count,
    SUM(CASE WHEN m.role = 'customer' THEN 1 ELSE 0 END) AS customer_message_count,
    SUM(CASE WHEN m.role <> 'customer' THEN 1 ELSE 0 END) AS reply_count,
    MIN(f.first_customer_at) AS first_customer_at,
    MIN(CASE WHEN m.role <> 'customer' AND m.created_at >= f.first_customer_at THEN m.created_at END) AS first_reply_at,
    MIN(CASE WHEN m.role = 'agent' AND m.created_at >= f.first_customer_at THEN m.created_at END) AS first_human_reply_at
  FROM m LEFT JOIN first_customer f ON f.ticket_id = m.ticket_id
  GROUP BY m.ticket_id
),
csat AS (
  SELECT ticket_id, score, submitted_at,
    ROW_NUMBER() OVER (PARTITION BY ticket_id ORDER BY submitted_at DESC, id DESC) AS pick
  FROM ${d.table('csat_surveys')}
  WHERE ${id('_deleted_at')} IS NULL AND score IS NOT NULL AND submitted_at IS NOT NULL
),
reopens AS (
  SELECT ticket_id, SUM(CASE WHEN is_reopen THEN 1 ELSE 0 END) AS reopen_count
  FROM (${ticketHistorySql(d).replace(/\n/g, '\n  ')}) h
  GROUP BY ticket_id
)
SELECT t.id AS ticket_id, t.ticket_number, t.created_at, t.status, t.channel, t.priority, t.assignee_id, t.team_id,
  th.first_customer_at AS first_customer_message_at,
  th.first_reply_at,
  ${d.secondsBetween('th.first_reply_at', 'th.first_customer_at')} AS first_response_seconds,
  th.first_human_reply_at,
  ${d.secondsBetween('th.first_human_reply_at', 'th.first_customer_at')} AS first_human_response_seconds,
  CASE WHEN t.status IN ('resolved', 'closed') THEN t.resolved_at END AS resolved_at,
  CASE WHEN t.status IN ('resolved', 'closed') AND t.resolved_at IS NOT NULL
    THEN ${d.secondsBetween('t.resolved_at', 't.created_at')} END AS resolution_seconds,
  COALESCE(th.message_count, 0) AS message_count,
  COALESCE(th.customer_message_count, 0) AS customer_message_count,
  COALESCE(th.reply_count, 0) AS reply_count,
  c.score AS csat_score,
  c.submitted_at AS csat_submitted_at,
  r.reopen_count
FROM ${d.table('tickets')} t
LEFT JOIN thread th ON th.ticket_id = t.id
LEFT JOIN reopens r ON r.ticket_id = t.id
LEFT JOIN csat c ON c.ticket_id = t.id AND c.pick = 1
WHERE t.${id('_deleted_at')} IS NULL`;
  },
};

// --- report_daily_values --------------------------------------------------------------------------------

const COMPARE_SUFFIX = '__compare';

const reportDailyValues: ViewSpec = {
  name: 'report_daily_values',
  description:
    'Daily report values in long form: one row per (query, time zone, day, series) of the saved report queries with `TIMESERIES day`, from the latest snapshot that has that day (creation-cohort values change as tickets develop, spec 2.11 rule 1). DO NOT add or average these rows to get a week or a month for percentages, medians, averages or distinct-ticket counts (spec 2.10 rule 5): snapshot a query for that period instead. A zero can mean "not yet updated" (spec 2.11 rule 3).',
  columns: viewColumns(
    'report_daily_values',
    z.object({
      query: z.string(),
      timezone: z.string(),
      day: z.string(),
      point_date: z.string(),
      metric_id: z.string(),
      is_comparison: z.boolean(),
      series_label: z.string(),
      format: z.string(),
      aggregation: z.string(),
      value: z.number(),
      taken_at: Timestamp,
      snapshot_id: z.string(),
    }),
    {
      query: 'The report query (report_snapshots.query).',
      timezone: 'Time zone the days are calendar days of.',
      day: "The calendar day (YYYY-MM-DD) in the query's time zone: the date part of the point's date.",
      point_date: "The point's date exactly as the API returned it (e.g. 2026-11-01T00:00:00+01:00).",
      metric_id: 'Metric id of the series (the series key without its __compare suffix).',
      is_comparison:
        'True for the COMPARE TO series (key ending in __compare): the value of the comparison period aligned to this day.',
      series_label: 'Display label of the series.',
      format: 'Display format (count, percent, duration-seconds, …).',
      aggregation:
        "The metric's aggregation from metric_catalog (count, average, median, ratio, …): only plain event counts may be added across days, and even then distinct-ticket counts may not.",
      value: 'The value; null when the API returned none for the day.',
      taken_at: 'When the snapshot holding this value was taken.',
      snapshot_id: 'The snapshot (joins report_snapshots).',
    },
  ),
  sql: (d) => {
    const suffix = d.string(COMPARE_SUFFIX);
    const isCompare = `(LENGTH(v.measure_key) > ${COMPARE_SUFFIX.length} AND SUBSTR(v.measure_key, LENGTH(v.measure_key) - ${COMPARE_SUFFIX.length - 1}) = ${suffix})`;
    return `WITH daily AS (
  SELECT s.query, s.timezone, s.taken_at, s.snapshot_id, SUBSTR(v.dimension_key, 1, 10) AS day,
    v.dimension_key AS point_date, v.measure_key, v.measure_label,
    v.format, v.value, ${isCompare} AS is_comparison,
    ROW_NUMBER() OVER (PARTITION BY s.query, s.timezone, v.dimension_key, v.measure_key ORDER BY s.taken_at DESC) AS pick
  FROM ${d.table('report_snapshots')} s
  JOIN ${d.table('report_snapshot_values')} v ON v.snapshot_id = s.snapshot_id
  WHERE s.kind = 'time-series' AND v.dimension_key IS NOT NULL AND ${d.hasDailyTimeseries('s.query')}
),
named AS (
  SELECT daily.*,
    CASE WHEN is_comparison THEN SUBSTR(measure_key, 1, LENGTH(measure_key) - ${COMPARE_SUFFIX.length}) ELSE measure_key END AS metric_id
  FROM daily WHERE pick = 1
)
SELECT n.query, n.timezone, n.day, n.point_date, n.metric_id, n.is_comparison, n.measure_label AS series_label, n.format,
  mc.aggregation, n.value, n.taken_at, n.snapshot_id
FROM named n
LEFT JOIN ${d.table('metric_catalog')} mc ON mc.id = n.metric_id AND mc.${d.ident('_deleted_at')} IS NULL`;
  },
};

// --- sync_coverage --------------------------------------------------------------------------------------

/** Passes whose windows are ranges of source time (reference snapshots and report snapshots are not). */
export const COVERAGE_PASSES: readonly string[] = ['tickets', ...ExportPass.options];

const syncCoverage: ViewSpec = {
  name: 'sync_coverage',
  description: `What source time the sync has read: per pass (${COVERAGE_PASSES.join(', ')}), the covered intervals merged from the succeeded windows in _sync_runs (a gap between two rows of a pass was never read successfully), with the pass's high-water mark from _sync_state. Tickets windows are ranges of created_at that were paged; export windows are ranges of the export's date.`,
  columns: viewColumns(
    'sync_coverage',
    z.object({
      pass: z.string(),
      covered_from: Timestamp,
      covered_until: Timestamp,
      windows: z.number().int(),
      last_succeeded_at: Timestamp,
      high_water_mark: z.string(),
    }),
    {
      pass: 'Pass (tickets or an export pass).',
      covered_from: 'Start of a covered interval (inclusive).',
      covered_until: 'End of the covered interval (exclusive).',
      windows: 'Succeeded windows merged into the interval.',
      last_succeeded_at: 'When the latest of those windows finished.',
      high_water_mark:
        "The pass's high-water mark (_sync_state, scope hwm): incremental runs re-read from here minus the look-back.",
    },
  ),
  sql: (d) => `WITH w AS (
  SELECT ${d.firstPathSegment('workflow_id')} AS pass, window_start, window_end, finished_at
  FROM ${d.table('_sync_runs')}
  WHERE parent_run_id IS NOT NULL AND status = 'succeeded' AND window_start IS NOT NULL AND window_end IS NOT NULL
),
ordered AS (
  SELECT w.*, MAX(window_end) OVER (PARTITION BY pass ORDER BY window_start, window_end
    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM w WHERE pass IN (${COVERAGE_PASSES.map((p) => d.string(p)).join(', ')})
),
islands AS (
  SELECT ordered.*, SUM(CASE WHEN reach IS NULL OR window_start > reach THEN 1 ELSE 0 END)
    OVER (PARTITION BY pass ORDER BY window_start, window_end ROWS UNBOUNDED PRECEDING) AS island
  FROM ordered
)
SELECT i.pass, MIN(i.window_start) AS covered_from, MAX(i.window_end) AS covered_until, COUNT(*) AS windows,
  MAX(i.finished_at) AS last_succeeded_at, MAX(h.high_water_mark) AS high_water_mark
FROM islands i
LEFT JOIN ${d.table('_sync_state')} h ON h.stream = i.pass AND h.scope = '${HIGH_WATER_MARK_SCOPE}'
GROUP BY i.pass, i.island`,
};

/** Every BI view, in creation order (none depends on another, so the order only fixes the docs). */
export const WAREHOUSE_VIEWS: readonly ViewSpec[] = [
  currentTickets,
  currentMessages,
  ticketFacts,
  reportDailyValues,
  syncCoverage,
  ...TICKET_HISTORY_VIEWS,
];

export const VIEW_NAMES = WAREHOUSE_VIEWS.map((v) => v.name);
