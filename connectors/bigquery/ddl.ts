import type { TableField, TableMetadata } from '@google-cloud/bigquery';
import {
  type ColumnSpec,
  sharesTables,
  type WarehouseScope,
  WORKSPACE_COLUMN,
} from '../../schemas/warehouse.js';
import { type ViewSpec, WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import { DestinationError } from '../errors.js';
import type { DestinationSettings } from '../settings.js';
import { EVERY_WORKSPACE, viewOfOneWorkspace } from '../sql/scoped-dialect.js';
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
    for (const t of tableLayouts(settings)) await prepareTable(session, settings.scope, t);
    if (sharesTables(settings.scope)) await registerWorkspace(session);
    // The BI views (schemas/warehouse-views.ts), after the tables so they see every migrated column.
    await replaceViews(session, WAREHOUSE_VIEWS);
  });
}

/** One view, created or replaced (BigQuery replaces a view whatever its columns were). */
export function replaceView(session: BigQuerySession, view: ViewSpec): Promise<void> {
  return session.withErrorMapping(`createView ${view.name}`, () => replaceViews(session, [view]));
}

// --- views of shared tables -------------------------------------------------------------------------------

/**
 * The workspaces of a shared-tables dataset, one row each, written by each workspace's prepare(): what the
 * views of shared tables union (BigQuery has no LATERAL to find them per query, as PostgreSQL's views do in
 * `_sync_runs`; a workspace's first prepare runs before its first run is recorded, and two new workspaces
 * prepare at once). Not in a schema of the workspace's own.
 */
export const WORKSPACES_TABLE = '_workspaces';

const WORKSPACE_FIELDS: TableField[] = [
  {
    name: WORKSPACE_COLUMN,
    type: 'STRING',
    mode: 'REQUIRED',
    description: 'A workspace writing the shared tables of this dataset (SYNC_WORKSPACE)',
  },
  { name: 'registered_at', type: 'TIMESTAMP', mode: 'REQUIRED', description: 'Its first prepare' },
];

/** The workspaces registered in `_workspaces` (a table read: no job). */
async function registeredWorkspaces(session: BigQuerySession): Promise<string[]> {
  const rows = await session.readTable(WORKSPACES_TABLE, [WORKSPACE_COLUMN]);
  return [...new Set(rows.map((r) => String(r[WORKSPACE_COLUMN])))].sort();
}

/**
 * Adds the workspace to `_workspaces` unless it is there: a table read first, so a prepare of a registered
 * workspace (every one after its first) runs no job; the MERGE keeps two concurrent first prepares to one row.
 */
async function registerWorkspace(session: BigQuerySession): Promise<void> {
  const table = session.client.dataset(session.dataset).table(WORKSPACES_TABLE);
  const [exists] = await table.exists();
  if (!exists)
    await table
      .create({
        schema: { fields: WORKSPACE_FIELDS },
        description: 'support-sync: the workspaces of these shared tables (what their views union)',
      })
      .catch((err: { code?: number }) => {
        if (err.code !== 409) throw err;
      });
  const workspace = session.scope.workspace;
  if ((await registeredWorkspaces(session)).includes(workspace)) return;
  const target = `${bqIdent(session.dataset)}.${bqIdent(WORKSPACES_TABLE)}`;
  const column = bqIdent(WORKSPACE_COLUMN);
  await session.script(`MERGE ${target} T USING (SELECT ${stringLiteral(workspace)} AS ${column}) S
ON T.${column} = S.${column}
WHEN NOT MATCHED THEN INSERT (${column}, registered_at) VALUES (S.${column}, CURRENT_TIMESTAMP())`);
}

/** The table function holding a view's SELECT over one workspace's rows (shared tables). */
const perWorkspaceFunction = (view: string) => `${view}__of_workspace`;

/**
 * Creates or replaces views. In a dataset of the workspace's own, the view's SELECT. In shared tables a view
 * is every workspace's, `workspace_id` first: its SELECT over one workspace's rows is a table function of
 * the workspace (every table it reads kept to that workspace's rows, sql/scoped-dialect.ts
 * viewOfOneWorkspace, so no join, window or aggregate mixes workspaces), and the view is the union of the
 * function over the workspaces registered in `_workspaces` — some 90 characters each, so a view holds some
 * 2,500 workspaces within BigQuery's 256K characters of a view's SQL. The list is read again after the
 * views are written and they are written again until it stands still: a workspace registered meanwhile
 * writes its views after its registration, so whichever prepare writes last has every workspace.
 */
async function replaceViews(session: BigQuerySession, views: readonly ViewSpec[]): Promise<void> {
  const d = session.dialect;
  if (!sharesTables(session.scope)) {
    for (const view of views)
      await session.run(`CREATE OR REPLACE VIEW ${d.target(view.name)} AS\n${view.sql(d)}`);
    return;
  }
  const column = bqIdent(WORKSPACE_COLUMN);
  for (const view of views) {
    if (!EVERY_WORKSPACE.has(view.name)) {
      const fn = `${bqIdent(session.dataset)}.${bqIdent(perWorkspaceFunction(view.name))}`;
      await session.run(
        `CREATE OR REPLACE TABLE FUNCTION ${fn}(view_workspace STRING) AS (\n${viewOfOneWorkspace(d, view, 'view_workspace')}\n)`,
      );
    }
  }
  let workspaces = await registeredWorkspaces(session);
  for (;;) {
    for (const view of views) {
      const fn = `${bqIdent(session.dataset)}.${bqIdent(perWorkspaceFunction(view.name))}`;
      const body = EVERY_WORKSPACE.has(view.name)
        ? view.sql(d)
        : workspaces
            .map(
              (w) => `SELECT ${stringLiteral(w)} AS ${column}, v__.* FROM ${fn}(${stringLiteral(w)}) AS v__`,
            )
            .join('\nUNION ALL\n');
      await session.run(`CREATE OR REPLACE VIEW ${d.target(view.name)} AS\n${body}`);
    }
    const now = await registeredWorkspaces(session);
    if (now.join() === workspaces.join()) return;
    workspaces = now;
  }
}

/**
 * A table of the other layout is refused, never migrated: a table of a dataset of its own given
 * `workspace_id` would keep its clustering and rows without it (two workspaces' rows would merge), and shared
 * tables cannot be split.
 */
function checkLayout(scope: WarehouseScope, table: string, fields: readonly { name: string }[]): void {
  const has = fields.some((f) => f.name === WORKSPACE_COLUMN);
  if (has === sharesTables(scope)) return;
  const was = has ? 'shared-tables' : 'schema-per-workspace';
  throw new DestinationError(
    `${table} ${has ? 'has' : 'has no'} a ${WORKSPACE_COLUMN} column: it was created with SYNC_WAREHOUSE_LAYOUT=${was}, and this deployment is set to ${scope.layout}. A populated deployment keeps its layout: set SYNC_WAREHOUSE_LAYOUT=${was}, or sync into a new dataset (DESTINATION_URL) with a full refresh (docs/guides/workspaces.md)`,
  );
}

/** Creates a table, or migrates the one there: relaxed modes, added columns filled from `_raw`. */
async function prepareTable(session: BigQuerySession, scope: WarehouseScope, t: TableLayout): Promise<void> {
  const table = session.client.dataset(session.dataset).table(t.name);
  const qualified = session.dialect.target(t.name);
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
  checkLayout(scope, `${session.dataset}.${t.name}`, fields);
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
 * item is there). Only NULL cells are written. In shared tables every workspace's rows, as PostgreSQL's
 * does: the column is added once, by whichever workspace prepares first, and each row takes its value from
 * its own `_raw` — no row is matched with another. Null when the column has no path (computed columns stay NULL;
 * their rows' hashes differ, so the next read rewrites them).
 */
export function fillFromRawSql(dataset: string, table: string, column: ColumnSpec): string | null {
  if (!column.path || column.path.length === 0) return null;
  const c = bqIdent(column.name);
  const value = rawValueSql(column);
  return `UPDATE ${bqIdent(dataset)}.${bqIdent(table)} SET ${c} = ${value} WHERE ${c} IS NULL AND ${value} IS NOT NULL`;
}
