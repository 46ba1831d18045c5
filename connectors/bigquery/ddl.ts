import type { TableField, TableMetadata } from '@google-cloud/bigquery';
import type { ColumnSpec } from '../../schemas/warehouse.js';
import { type ViewSpec, WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import type { DestinationSettings } from '../settings.js';
import { type TableLayout, tableLayouts } from '../table-layouts.js';
import { BQ_TYPES, bqIdent, stringLiteral } from './dialect.js';
import type { BigQuerySession } from './session.js';

/*
 * BigQuery's DDL: the dataset, every table with its partitioning and clustering, additive migrations (new
 * columns added, then filled from `_raw`; relaxed REQUIRED modes), then the BI views.
 */

export function fieldOf(c: ColumnSpec, required: boolean): TableField {
  return {
    name: c.name,
    type: BQ_TYPES[c.type],
    mode: required && !c.nullable ? 'REQUIRED' : 'NULLABLE',
    description: c.description.slice(0, 1024),
  };
}

/** Creates or migrates every table, then the views (see DestinationSchema.prepare). */
export function prepareBigQuery(session: BigQuerySession, settings: DestinationSettings): Promise<void> {
  return session.withErrorMapping('prepare', async () => {
    const dataset = session.client.dataset(session.dataset);
    const [exists] = await dataset.exists();
    if (!exists) {
      await dataset.create({ location: await session.location() }).catch((err: { code?: number }) => {
        if (err.code !== 409) throw err; // created concurrently
      });
    }
    for (const t of tableLayouts(settings)) await prepareTable(session, t);
    // The BI views (schemas/warehouse-views.ts), after the tables so they see every migrated column.
    for (const view of WAREHOUSE_VIEWS) await replaceViewSql(session, view);
  });
}

/** One view, created or replaced (BigQuery replaces a view whatever its columns were). */
export function replaceView(session: BigQuerySession, view: ViewSpec): Promise<void> {
  return session.withErrorMapping(`createView ${view.name}`, () => replaceViewSql(session, view));
}

async function replaceViewSql(session: BigQuerySession, view: ViewSpec): Promise<void> {
  const d = session.dialect;
  await session.run(`CREATE OR REPLACE VIEW ${d.table(view.name)} AS\n${view.sql(d)}`);
}

/** Creates a table, or migrates the one there: relaxed modes, added columns filled from `_raw`. */
async function prepareTable(session: BigQuerySession, t: TableLayout): Promise<void> {
  const table = session.client.dataset(session.dataset).table(t.name);
  const qualified = session.dialect.table(t.name);
  const [tableExists] = await table.exists();
  if (!tableExists) {
    const metadata: TableMetadata = {
      schema: { fields: t.columns.map((c) => fieldOf(c, true)) },
      description: t.description,
      ...(t.partitionBy ? { timePartitioning: { type: 'DAY', field: t.partitionBy } } : {}),
      ...(t.clusterBy.length > 0 ? { clustering: { fields: [...t.clusterBy].slice(0, 4) } } : {}),
    };
    await table.create(metadata).catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
    return;
  }
  // Additive migration: append missing columns as NULLABLE (tables.patch keeps existing data).
  const [meta] = await table.getMetadata();
  const fields = (meta.schema?.fields ?? []) as { name: string; mode?: string }[];
  const have = new Set(fields.map((f) => f.name));
  // Fields the reader now treats as open (they may be missing) become NULLABLE (a relaxation BigQuery
  // allows on a table with data).
  const relaxed = t.columns.filter(
    (c) => c.nullable && fields.some((f) => f.name === c.name && f.mode === 'REQUIRED'),
  );
  for (const c of relaxed)
    await session.run(`ALTER TABLE ${qualified} ALTER COLUMN ${bqIdent(c.name)} DROP NOT NULL`);
  const missing = t.columns.filter((c) => !have.has(c.name));
  if (missing.length === 0) return;
  // Added with DDL (the documented path), nullable; then the schema is re-read, and patched through
  // tables.patch if the service still lists the old fields (the emulator keeps the two apart).
  for (const c of missing)
    await session.run(
      `ALTER TABLE ${qualified} ADD COLUMN IF NOT EXISTS ${bqIdent(c.name)} ${BQ_TYPES[c.type]}`,
    );
  const [after] = await table.getMetadata();
  const afterFields = (after.schema?.fields ?? []) as { name: string }[];
  const stillMissing = missing.filter((c) => !afterFields.some((f) => f.name === c.name));
  if (stillMissing.length > 0)
    await table.setMetadata({
      schema: { fields: [...afterFields, ...stillMissing.map((c) => fieldOf(c, false))] },
    });
  // Then the new columns are filled from `_raw` where it has them (no re-fetch: the item is there).
  if (have.has('_raw'))
    for (const c of missing) {
      const fill = fillFromRawSql(session.dataset, t.name, c);
      if (fill) await session.script(fill);
    }
}

// --- migrations: new columns filled from `_raw` ----------------------------------------------------------

/**
 * The value of `column` read from `_raw` along its path, converted to its type (SAFE_CAST: a value that
 * does not fit stays NULL instead of failing the migration). JSON nulls are SQL NULLs, as `toRow` has them.
 */
export function rawValueSql(column: ColumnSpec): string {
  // Path keys are zod field names; anything but a plain name would need JSONPath quoting rules we avoid.
  const path = `$${column.path!.map((k) => `.${bqIdent(k).slice(1, -1)}`).join('')}`;
  const p = stringLiteral(path);
  if (column.type === 'json')
    return `IF(JSON_TYPE(JSON_QUERY(\`_raw\`, ${p})) = 'null', NULL, JSON_QUERY(\`_raw\`, ${p}))`;
  const text = `JSON_VALUE(\`_raw\`, ${p})`;
  return column.type === 'string' ? text : `SAFE_CAST(${text} AS ${BQ_TYPES[column.type]})`;
}

/**
 * Fills a column a migration just added, on the rows that have a value for it in `_raw` (no re-fetch: the
 * item is there). Only NULL cells are written. Null when the column has no path (computed columns stay NULL;
 * their rows' hashes differ, so the next read rewrites them).
 */
export function fillFromRawSql(dataset: string, table: string, column: ColumnSpec): string | null {
  if (!column.path || column.path.length === 0) return null;
  const c = bqIdent(column.name);
  const value = rawValueSql(column);
  return `UPDATE ${bqIdent(dataset)}.${bqIdent(table)} SET ${c} = ${value} WHERE ${c} IS NULL AND ${value} IS NOT NULL`;
}
