/**
 * Writes docs/warehouse.md from the table specs in schemas/warehouse.ts, so the documentation of every
 * table and column cannot drift from what the destinations create. `npx tsx scripts/warehouse-docs.ts`;
 * test/destinations/docs.test.ts fails when the file is stale.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { BQ_TYPES } from '../connectors/bigquery/sql.js';
import { PG_TYPES } from '../connectors/postgres/sql.js';
import { type ColumnSpec, SYSTEM_TABLES, TABLES } from '../schemas/warehouse.js';

const INTRO = `# Warehouse tables

Generated from \`schemas/warehouse.ts\` by \`npx tsx scripts/warehouse-docs.ts\` — edit the specs, not this file.

The sync writes these tables in PostgreSQL (schema \`support\` by default) or in a BigQuery dataset. Columns are
derived from the API's zod schemas: every known field of an item is a typed column, nested objects and arrays
are JSON columns (the ticket's contact is flattened to \`contact_*\`), and \`_raw\` keeps the item exactly as
received, so a field the API adds later is in \`_raw\` before it gets a column.

## Conventions

- **Primary keys.** Rows are merged by primary key; the sync never creates duplicates.
- **Versions.** A table either has a *version* column — an incoming row replaces the stored one only if its
  version is strictly greater (an older or equal version is a no-op, so re-reads and out-of-order pages are
  harmless) — or, when the source has no version, the *content* rule: the latest sync wins when any column
  differs, identical content is a no-op. \`storedVersions\` returns versions as canonical strings
  (\`YYYY-MM-DDTHH:MM:SS.ffffffZ\`, UTC, microseconds).
- **\`_synced_at\`** is when a sync last received the row from the source, refreshed even when the content did
  not change; a full refresh marks rows with \`_synced_at\` before its start as deleted.
- **\`_deleted_at\`** (tables that track deletion) is set when the row disappeared from the source; rows are
  never hard-deleted. A row that comes back is revived (\`_deleted_at\` reset to null).
- **Text.** U+0000 (which PostgreSQL cannot store) and lone UTF-16 surrogates are replaced by U+FFFD, in
  every destination alike; everything else is stored as received, with no length limit in PostgreSQL
  (BigQuery: 10 MB per value).
- **Migrations.** When a column is added to a table spec, \`prepare()\` adds it (nullable) to the existing
  table; existing rows get a value when they are next synced.
- **Atomicity.** A page's rows and its checkpoint rows in \`_sync_state\` commit together: one PostgreSQL
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

export function renderWarehouseDocs(): string {
  const parts = [INTRO, '## Data tables\n'];
  for (const t of Object.values(TABLES)) {
    const rule =
      t.merge.kind === 'version'
        ? `version column \`${t.merge.column}\` (newer wins, equal is a no-op)`
        : 'content (latest sync wins when any column differs)';
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
