/**
 * Writes docs/warehouse.md from the table specs (schemas/warehouse/, read through the schemas/warehouse.ts
 * barrel) and the views, so the documentation of every table and column cannot drift from what the
 * destinations create. `npx tsx scripts/warehouse-docs.ts`;
 * test/destinations/docs.test.ts fails when the file is stale.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { BQ_TYPES } from '../connectors/bigquery/dialect.js';
import { PG_TYPES } from '../connectors/postgres/dialect.js';
import { customFieldLabelsView, customFieldsView } from '../schemas/custom-fields-view.js';
import { STREAMS, THREADS_STREAM } from '../schemas/streams.js';
import { type ColumnSpec, SYSTEM_TABLES, TABLES } from '../schemas/warehouse.js';
import { WAREHOUSE_VIEWS } from '../schemas/warehouse-views.js';

const INTRO = `# Warehouse tables

Generated from \`schemas/warehouse.ts\` by \`npm run docs:warehouse\` — edit the specs, not this file.

The sync writes these tables in PostgreSQL (schema \`support\` by default) or in a BigQuery dataset. Columns are
derived from the API's zod schemas: every known field of an item is a typed column, nested objects and arrays
are JSON columns (the ticket's contact is flattened to \`contact_*\`), and \`_raw\` keeps the item exactly as
received, so a field the API adds later is in \`_raw\` before it gets a column.

## Conventions

- **Primary keys.** Rows are merged by primary key; the sync never creates duplicates.
- **Changes are seen by content.** Every data table has \`_content_hash\`: the SHA-256 (hex) of the row's
  typed columns and \`_raw\` as canonical JSON (object keys sorted at every depth; \`_synced_at\`,
  \`_deleted_at\` and the hash itself left out), computed by the table spec when the row is built. A change
  the source makes without moving its version — a field only \`_raw\` has, a value fixed in place — still
  reaches the warehouse.
- **Merge rules.** A table either has a *version* column — an incoming row replaces the stored one when its
  version is strictly greater, or equal with a different \`_content_hash\`; an older version never replaces a
  newer one, and an equal version with identical content is a no-op, so re-reads and out-of-order pages are
  harmless — or, when the source has no version, the *content* rule: the incoming row wins when its
  \`_content_hash\` differs, identical content is a no-op. A stored \`_content_hash\` that is null (a row
  written before the column existed) counts as different, so the next read rewrites such rows. A row marked
  deleted that comes back always wins. \`storedVersions\` returns, per id, the version as a canonical string
  (\`YYYY-MM-DDTHH:MM:SS.ffffffZ\`, UTC, microseconds; null for content tables) and the stored
  \`_content_hash\`: the ticket sweep rewrites a ticket whose version or content changed, and queues its
  thread only when the version moved (or the ticket is new).
- **\`_synced_at\`** is when a sync last received the row from the source, refreshed even when the content did
  not change (the ticket sweep records every ticket a list page served); a complete ticket sweep (and a full
  refresh, for the other tables) marks rows with \`_synced_at\` before its start as deleted — never rows it did
  not manage to read: with a guard (\`unlessUnread\`), rows whose ticket number has a \`_thread_queue\` entry
  that is not \`complete\` are kept (the messages of a thread whose read failed or is still queued:
  \`${STREAMS[THREADS_STREAM].table}.ticket_number\` against \`_thread_queue.ticket_number\`).
  On BigQuery a row received again unchanged gets its newer \`_synced_at\` lazily — before a deletion
  that may mark rows of its table, or within a day — so a query of the column may read a value up to a day
  old for such a row; the deletion checks, the audit and \`status\` count the sightings not folded yet
  (docs/guides/bigquery.md, "Sightings are folded lazily").
- **\`_deleted_at\`** (tables that track deletion) is set when the row disappeared from the source; rows are
  never hard-deleted. A row that comes back is revived (\`_deleted_at\` reset to null).
- **Text.** U+0000 (which PostgreSQL cannot store) and lone UTF-16 surrogates are replaced by U+FFFD, in
  every destination alike; everything else is stored as received, with no length limit in PostgreSQL
  (BigQuery: 10 MB per value).
- **Migrations.** When a column is added to a table spec, \`prepare()\` adds it (nullable) to the existing
  table and fills it on the existing rows from \`_raw\` in SQL (no re-fetch), along the column's path in the
  item (e.g. \`contact.email\`), converted to its type (timestamps, integers, floats, booleans, strings, JSON),
  only where the column is null and \`_raw\` has a value there; a value that does not fit the type stays
  null. Computed columns (no path in the item, e.g. \`_version\`, \`_content_hash\`) stay null until the next
  read: their rows' content hashes differ from what the sync computes, so it rewrites them.
- **Rows set aside.** An item the sync cannot store (e.g. one that breaks its table's rules) does not stop the
  page: it goes to \`_rejected\` (one row per table and item key) in the same transaction as the page's rows
  and checkpoint. When a later batch of that table stores a row with the item's id, the entry gets
  \`resolved_at\`; unresolved entries are those with \`resolved_at\` null.
- **Atomicity.** A page's rows and its checkpoint rows in \`_sync_state\` (and the thread-queue entries it
  writes, in \`_thread_queue\`) commit together: one PostgreSQL
  transaction (COPY into a temporary staging table, then \`INSERT … ON CONFLICT\`), or one BigQuery
  multi-statement transaction (load job into a staging table, then \`MERGE\`).
- **Layout.** PostgreSQL: primary key plus the indexes listed per table. BigQuery: daily partitioning on the
  listed column and clustering on the listed columns.

## Types

| Logical | PostgreSQL | BigQuery |
|---|---|---|
${(Object.keys(PG_TYPES) as (keyof typeof PG_TYPES)[]).map((t) => `| ${t} | \`${PG_TYPES[t]}\` | \`${BQ_TYPES[t]}\` |`).join('\n')}
`;

const escapePipes = (s: string) => s.replace(/\|/g, '\\|');

function columnsTable(columns: readonly ColumnSpec[]): string {
  const rows = columns.map((c) => {
    const values = c.enumValues ? ` Values: ${c.enumValues.map((v) => `\`${v}\``).join(', ')}.` : '';
    return `| \`${c.name}\` | ${c.type} | ${c.nullable ? 'yes' : 'no'} | ${escapePipes(c.description)}${escapePipes(values)} |`;
  });
  return ['| Column | Type | Null | Description |', '|---|---|---|---|', ...rows].join('\n');
}

/** How `report_snapshots` / `report_snapshot_values` get filled: the REPORT_QUERIES setting. */
const REPORT_SNAPSHOTS = `## Report snapshots

The \`report_snapshots\` stream keeps the history of saved report queries: every sync run executes each
configured query once (\`POST /reports/query\`, analytics route class, on the analytics task queue whose rate
Temporal enforces) and writes one \`report_snapshots\` row, its flattened \`report_snapshot_values\` rows and
the query's checkpoint in \`_sync_state\` (stream \`report_snapshots\`, scope = the query's name, high-water
mark = \`taken_at\`) in one transaction. \`taken_at\` is the run's upper bound, so a retried or replayed run
rewrites the same snapshot instead of adding one. With no queries configured the stream does nothing.

Configure the queries with \`REPORT_QUERIES\`, the path to a YAML file holding a list of
\`{ name, query, timezone }\` (the query in the language of spec section 4.12, one clause per line):

\`\`\`yaml
- name: new-tickets-this-month        # unique; letters, digits, _ . -
  timezone: Europe/Berlin             # IANA time zone the report is computed in
  query: |
    FROM tickets
    SHOW new_tickets
    DURING this_month
    VISUALIZE new_tickets TYPE kpi
- name: new-tickets-by-channel
  timezone: UTC
  query: |
    FROM tickets
    SHOW new_tickets
    DURING last_month
    GROUP BY channel
    VISUALIZE new_tickets TYPE horizontal_bar
\`\`\`

A query can carry its own schedule — \`schedule: { cron: "0 * * * *", timezone: UTC }\` — and is then taken by
that schedule alone: \`schedule create\` makes one Temporal schedule per such query
(\`support-sync-report-<name>\`, running only the \`report_snapshots\` stream for it) and leaves it out of the
every-run snapshots. \`examples/report-queries.yaml\` holds a KPI with \`COMPARE TO\`, a daily time series, a
channel table and a snapshot metric; \`npm start\` on the embedded companion uses it when \`REPORT_QUERIES\` is
unset. Daily series are also in long form in the view \`report_daily_values\` (below).

The file is validated at start-up; a problem is reported with the entry's position and name and the field
(exit code 2). A query the API rejects (400) fails the \`report_snapshots\` stream of that run with the
query's name, the offending line and the API's message; queries taken before it in the run are kept. The
run takes them itself (one activity per query in its history); \`_sync_runs\` records them as the window
\`report_snapshots/<from>/<before>\`. To chart a KPI over time:

\`\`\`sql
SELECT s.taken_at, v.value
FROM support.report_snapshots s JOIN support.report_snapshot_values v USING (snapshot_id)
WHERE s.query LIKE '%SHOW new_tickets%' AND v.measure_key = 'value'
ORDER BY s.taken_at;
\`\`\`
`;

/** The BI views: what each holds, its columns, and example queries (PostgreSQL; BigQuery alike). */
const VIEWS_INTRO = `## BI views

Views for BI tools, defined once in \`schemas/warehouse-views.ts\` and created (or replaced) by every
\`prepare()\` — each sync run — in PostgreSQL (schema \`support\`) and in BigQuery (the dataset) from the
same definitions, so they follow every table migration. Read these instead of the raw tables: they drop rows
the source deleted and derive the facts that otherwise take a hand-written query.

**Semantics (spec 2.10 rule 5, 2.11).** Never rebuild a period's percentage, median or average — nor a count
of distinct tickets — by adding or averaging daily values: snapshot a report query for that period (a KPI)
instead. \`ticket_facts\` gives one row per ticket, so a median *over tickets* of a period is computed over its
rows directly (as below), never as the median of daily medians. A zero in a report can mean "not yet
updated" (spec 2.11 rule 3); creation-cohort values change as tickets develop (rule 1).

Example queries (PostgreSQL; in BigQuery replace \`support.\` by your dataset and use the BigQuery functions
named in the comments):

\`\`\`sql
-- Median first response time of tickets created last week, per channel (BigQuery: APPROX_QUANTILES).
SELECT channel, percentile_cont(0.5) WITHIN GROUP (ORDER BY first_response_seconds) AS median_first_response_s,
       count(*) AS tickets
FROM support.ticket_facts
WHERE created_at >= date_trunc('week', now()) - interval '7 days' AND created_at < date_trunc('week', now())
GROUP BY channel ORDER BY channel;

-- New tickets per day: the warehouse's count next to the report API's (from the daily snapshot query).
SELECT r.day, r.value AS reported, count(t.id) AS in_warehouse
FROM support.report_daily_values r
LEFT JOIN support.current_tickets t ON to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') = r.day
WHERE r.metric_id = 'new_tickets' AND NOT r.is_comparison AND r.timezone = 'UTC'
GROUP BY r.day, r.value ORDER BY r.day;

-- Resolution time and CSAT by assignee, resolved tickets of the last 30 days.
SELECT a.name, avg(f.resolution_seconds) / 3600 AS avg_resolution_h, avg(f.csat_score) AS csat, count(*) AS tickets
FROM support.ticket_facts f JOIN support.agents a ON a.id = f.assignee_id
WHERE f.resolved_at >= now() - interval '30 days'
GROUP BY a.name ORDER BY tickets DESC;

-- Is the history complete? Gaps between rows of a pass were never read successfully.
SELECT * FROM support.sync_coverage ORDER BY pass, covered_from;
\`\`\`
`;

/**
 * `ticket_custom_fields`, whose field columns come from the data: its fixed columns and how the rest are made;
 * and `ticket_custom_field_labels`, which maps them to labels.
 */
function customFieldsViewSection(): string {
  const view = customFieldsView([]);
  const labels = customFieldLabelsView([]);
  const cols = view.columns.map((c) => ({ ...c, nullable: true }));
  return `### \`${view.name}\` (view, generated)

${view.description}

${columnsTable(cols)}
| *one per custom field and type of value* | float, boolean, timestamp, string or json | yes | Named \`<field id>_<type>\` (type: number, boolean, timestamp, text, json) when the field id is a plain lower-case name of at most 40 characters (\`[a-z][a-z0-9_]*\`, not starting with \`cf_\`), else \`cf_<first 12 hex of the id's SHA-256>_<type>\`: the name depends on nothing but the id and the type, so a label renamed at the source renames nothing. Typed by the values of the stored tickets (deleted ones included): JSON numbers → float, booleans → boolean, ISO dates or instants with an offset → timestamp (a date is midnight UTC), other strings → string, objects and lists → json. A field with values of several types has one column per type, each holding only the values of its type; a column stays when no stored ticket holds its type any more (kept through \`${labels.name}\`). A date that is no day (\`2025-02-31\`) is null here, and whole in \`tickets.ticket_fields\`. The column's comment (PostgreSQL) names the field id, its label and the count of values. |

A field is an entry of \`ticket_fields\` (spec 2.2: shape not shown) with an id in \`field_id\`, \`id\` or \`key\`,
a label in \`name\`, \`label\` or \`title\`, and its value in \`value\` (\`schemas/api/custom-fields.ts\`). The view
is regenerated at \`prepare()\` (each worker's start) and after every run that recorded a new custom field
(or one of a custom field's values of another type than the one it declares) in \`_schema_changes\` — once per
run, so the columns come from every value the run stored.

### \`${labels.name}\` (view, generated)

${labels.description}

${columnsTable(labels.columns.map((c) => ({ ...c, nullable: true })))}

\`\`\`sql
-- The column of a label, then refund amounts per product over the last 30 days.
SELECT label, column_name, value_type FROM support.ticket_custom_field_labels ORDER BY label;
SELECT c.fld_5c1e0a77d2_text AS product, sum(c.fld_13a467c906_number) AS refunds, count(*) AS tickets
FROM support.ticket_custom_fields c JOIN support.current_tickets t ON t.id = c.ticket_id
WHERE t.created_at >= now() - interval '30 days' GROUP BY 1;

-- What the source started to send that the connector does not know, newest first.
SELECT first_seen_at, kind, table_name, field_path, observed, expected, runs_seen, example
FROM support._schema_changes ORDER BY first_seen_at DESC;
\`\`\`
`;
}

function viewsSection(): string {
  const parts = [VIEWS_INTRO];
  for (const v of WAREHOUSE_VIEWS) {
    const cols = v.columns.map((c) => ({ ...c, nullable: true }));
    parts.push(`### \`${v.name}\` (view)\n\n${v.description}\n\n${columnsTable(cols)}\n`);
  }
  parts.push(customFieldsViewSection());
  return parts.join('\n');
}

export function renderWarehouseDocs(): string {
  const parts = [INTRO, '## Data tables\n'];
  for (const t of Object.values(TABLES)) {
    const rule =
      t.merge.kind === 'version'
        ? `version column \`${t.merge.column}\` (newer wins; equal wins when \`_content_hash\` differs; older never)`
        : 'content (the incoming row wins when `_content_hash` differs)';
    parts.push(
      `### \`${t.name}\`\n\n${t.description}\n\n` +
        `- Primary key: ${t.primaryKey.map((k) => `\`${k}\``).join(', ')}\n` +
        `- Merge rule: ${rule}\n` +
        `- Deletion tracked: ${t.tracksDeletion ? 'yes (`_deleted_at`)' : 'no'}\n` +
        `- PostgreSQL indexes: ${t.indexes.length ? t.indexes.map((i) => `(${i.join(', ')})`).join(', ') : 'primary key only'}\n` +
        `- BigQuery: ${t.partitionBy ? `partitioned by day on \`${t.partitionBy}\`` : 'not partitioned'}` +
        `${t.clusterBy.length ? `, clustered by ${t.clusterBy.map((c) => `\`${c}\``).join(', ')}` : ''}\n\n` +
        `${columnsTable(t.columns)}\n`,
    );
  }
  parts.push(REPORT_SNAPSHOTS);
  parts.push(viewsSection());
  parts.push('## Bookkeeping tables\n');
  for (const t of Object.values(SYSTEM_TABLES))
    parts.push(
      `### \`${t.name}\`\n\n${t.description}\n\n- Primary key: ${t.primaryKey.map((k) => `\`${k}\``).join(', ')}\n\n${columnsTable(t.columns)}\n`,
    );
  return parts.join('\n');
}

export const WAREHOUSE_DOCS_PATH = fileURLToPath(new URL('../docs/warehouse.md', import.meta.url));

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeFile(WAREHOUSE_DOCS_PATH, renderWarehouseDocs());
  console.log(`wrote ${WAREHOUSE_DOCS_PATH}`);
}
