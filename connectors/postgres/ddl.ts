import type pg from 'pg';
import {
  type ColumnSpec,
  sharesTables,
  type WarehouseScope,
  WORKSPACE_COLUMN,
} from '../../schemas/warehouse.js';
import { type ViewSpec, WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import { DestinationError } from '../errors.js';
import type { DestinationSettings } from '../settings.js';
import { viewColumnsOf, viewSql } from '../sql/scoped-dialect.js';
import { tableLayouts } from '../table-layouts.js';
import { ident, PG_TYPES, stringLiteral } from './dialect.js';
import type { PostgresSession } from './session.js';

/*
 * PostgreSQL's DDL: the schema, every table with its key and indexes, additive migrations (new columns
 * filled from `_raw`, relaxed NOT NULLs), then the BI views.
 */

export function columnDdl(c: ColumnSpec, withNotNull: boolean): string {
  return `${ident(c.name)} ${PG_TYPES[c.type]}${withNotNull && !c.nullable ? ' NOT NULL' : ''}`;
}

export function createTableSql(
  schema: string,
  name: string,
  columns: readonly ColumnSpec[],
  pk: readonly string[],
) {
  return `CREATE TABLE IF NOT EXISTS ${ident(schema)}.${ident(name)} (\n  ${columns
    .map((c) => columnDdl(c, true))
    .join(',\n  ')},\n  PRIMARY KEY (${pk.map(ident).join(', ')})\n)`;
}

export function indexSql(schema: string, table: string, columns: readonly string[]): string {
  const name = `${table}__${columns.join('__')}_idx`.slice(0, 63);
  return `CREATE INDEX IF NOT EXISTS ${ident(name)} ON ${ident(schema)}.${ident(table)} (${columns.map(ident).join(', ')})`;
}

/** Creates or migrates every table, then the views, in one transaction (see DestinationSchema.prepare). */
export function preparePostgres(session: PostgresSession, settings: DestinationSettings): Promise<void> {
  const schema = session.schema;
  const table = (name: string) => `${ident(schema)}.${ident(name)}`;
  return session.transaction('prepare', async (client) => {
    await session.lockDdl(client);
    if (sharesTables(settings.scope)) await checkSharedTablesServer(client);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${ident(schema)}`);
    const existing = await client.query<{ table_name: string; column_name: string; is_nullable: string }>(
      'SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = $1',
      [schema],
    );
    const have = new Map<string, Set<string>>();
    const notNull = new Set<string>();
    for (const r of existing.rows) {
      if (!have.has(r.table_name)) have.set(r.table_name, new Set());
      have.get(r.table_name)!.add(r.column_name);
      if (r.is_nullable === 'NO') notNull.add(`${r.table_name}.${r.column_name}`);
    }
    for (const t of tableLayouts(settings)) {
      const cols = have.get(t.name);
      if (cols) checkLayout(settings.scope, `${schema}.${t.name}`, cols);
      if (!cols) {
        await client.query(createTableSql(schema, t.name, t.columns, t.primaryKey));
      } else {
        // Additive migration: new columns are added nullable, then filled from `_raw` where it has them.
        for (const c of t.columns)
          if (!cols.has(c.name)) {
            await client.query(
              `ALTER TABLE ${table(t.name)} ADD COLUMN IF NOT EXISTS ${columnDdl(c, false)}`,
            );
            const fill = cols.has('_raw') ? fillFromRawSql(schema, t.name, c) : null;
            if (fill) await client.query(fill);
          } else if (c.nullable && notNull.has(`${t.name}.${c.name}`)) {
            // A field the reader now treats as open (it may be missing): the column accepts null.
            await client.query(`ALTER TABLE ${table(t.name)} ALTER COLUMN ${ident(c.name)} DROP NOT NULL`);
          }
      }
      for (const index of t.indexes) await client.query(indexSql(schema, t.name, index));
    }
    await createViews(client, session, settings.scope);
  });
}

/**
 * The BI views (schemas/warehouse-views.ts), after the tables so they see every migrated column. CREATE OR
 * REPLACE cannot drop or retype a view column: when a definition changed that way the view is dropped and
 * created again (without CASCADE: a user's object built on it makes prepare() fail loudly instead).
 */
async function createViews(
  client: pg.PoolClient,
  session: PostgresSession,
  scope: WarehouseScope,
): Promise<void> {
  for (const view of WAREHOUSE_VIEWS) await createView(client, session, scope, view);
}

async function createView(
  client: pg.PoolClient,
  session: PostgresSession,
  scope: WarehouseScope,
  view: ViewSpec,
): Promise<void> {
  const d = session.dialect;
  const name = d.target(view.name);
  const body = viewSql(d, scope, view);
  await client.query('SAVEPOINT view_ddl');
  try {
    await client.query(`CREATE OR REPLACE VIEW ${name} AS\n${body}`);
  } catch {
    await client.query('ROLLBACK TO SAVEPOINT view_ddl');
    await client.query(`DROP VIEW IF EXISTS ${name}`);
    await client.query(`CREATE VIEW ${name} AS\n${body}`);
  }
  await client.query('RELEASE SAVEPOINT view_ddl');
  await client.query(`COMMENT ON VIEW ${name} IS ${d.string(view.description)}`);
  for (const c of viewColumnsOf(scope, view))
    await client.query(`COMMENT ON COLUMN ${name}.${ident(c.name)} IS ${d.string(c.description)}`);
}

/** One view, created or replaced in a transaction of its own, serialized with prepare() (the DDL lock). */
export function replaceView(session: PostgresSession, scope: WarehouseScope, view: ViewSpec): Promise<void> {
  return session.transaction(`createView ${view.name}`, async (client) => {
    await session.lockDdl(client);
    await createView(client, session, scope, view);
  });
}

/**
 * Shared tables read a workspace's rows as a subquery in FROM, which statements name without an alias
 * (`FROM (SELECT …) WHERE …`): PostgreSQL takes that from version 16 on.
 */
async function checkSharedTablesServer(client: pg.PoolClient): Promise<void> {
  const r = await client.query<{ v: string }>("SELECT current_setting('server_version_num') AS v");
  const version = Number(r.rows[0]?.v ?? 0);
  if (version < 160000)
    throw new DestinationError(
      `SYNC_WAREHOUSE_LAYOUT=shared-tables needs PostgreSQL 16 or later; this server is ${Math.floor(version / 10000)}`,
    );
}

/**
 * A table of the other layout is refused, never migrated: a schema-per-workspace table given `workspace_id`
 * would keep its key without it (two workspaces' rows would merge), and shared tables cannot be split.
 */
function checkLayout(scope: WarehouseScope, table: string, columns: ReadonlySet<string>): void {
  const has = columns.has(WORKSPACE_COLUMN);
  if (has === sharesTables(scope)) return;
  const was = has ? 'shared-tables' : 'schema-per-workspace';
  throw new DestinationError(
    `${table} ${has ? 'has a' : 'has no'} ${WORKSPACE_COLUMN} column: it was created with SYNC_WAREHOUSE_LAYOUT=${was}, and this deployment is set to ${scope.layout}. A populated deployment keeps its layout: set SYNC_WAREHOUSE_LAYOUT=${was}, or sync into a new schema (POSTGRES_SCHEMA) with a full refresh (docs/guides/workspaces.md)`,
  );
}

// --- migrations: new columns filled from `_raw` ----------------------------------------------------------

/** SQL text matching an ISO 8601 instant (what a timestamp column accepts; anything else stays NULL). */
const ISO_INSTANT = `'^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:?\\d{2})$'`;

/**
 * The value of `column` read from `_raw` along its path, converted to its type; NULL where `_raw`'s value
 * does not fit the type (a guard per type instead of a cast that would fail the whole migration).
 */
export function rawValueSql(column: ColumnSpec): string {
  const v = `("_raw" #> ARRAY[${column.path!.map(stringLiteral).join(', ')}]::text[])`;
  const is = (t: string) => `jsonb_typeof(${v}) = '${t}'`;
  switch (column.type) {
    case 'string':
      // Scalars as their text, as the API schemas' open text fields read them (and BigQuery's JSON_VALUE).
      return `CASE WHEN jsonb_typeof(${v}) IN ('string', 'number', 'boolean') THEN ${v} #>> '{}' END`;
    case 'integer': {
      // Nested: the numeric cast runs only on a JSON number (AND does not promise an evaluation order).
      const n = `(${v} #>> '{}')::numeric`;
      return `CASE WHEN ${is('number')} THEN CASE WHEN ${n} = trunc(${n}) AND abs(${n}) < 9e18 THEN ${n}::bigint END END`;
    }
    case 'float':
      return `CASE WHEN ${is('number')} THEN (${v} #>> '{}')::double precision END`;
    case 'boolean':
      return `CASE WHEN ${is('boolean')} THEN (${v} #>> '{}')::boolean END`;
    case 'timestamp':
      return `CASE WHEN ${is('string')} AND (${v} #>> '{}') ~* ${ISO_INSTANT} THEN (${v} #>> '{}')::timestamptz END`;
    case 'json':
      return `NULLIF(${v}, 'null'::jsonb)`;
  }
}

/**
 * Fills a column a migration just added, on the rows that have a value for it in `_raw` (no re-fetch: the
 * item is there). Only NULL cells are written, so a row a sync already wrote keeps its value. Null when the
 * column has no path (computed columns stay NULL; their rows' hashes differ, so the next read rewrites them).
 */
export function fillFromRawSql(schema: string, table: string, column: ColumnSpec): string | null {
  if (!column.path || column.path.length === 0) return null;
  const c = ident(column.name);
  const value = rawValueSql(column);
  return `UPDATE ${ident(schema)}.${ident(table)} SET ${c} = ${value} WHERE ${c} IS NULL AND ${value} IS NOT NULL`;
}
