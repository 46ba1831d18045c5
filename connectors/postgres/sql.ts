import {
  type ColumnSpec,
  type ColumnType,
  SYSTEM_TABLES,
  type SystemTableName,
  type TableSpec,
  type WarehouseRow,
} from '../../schemas/warehouse.js';
import type { SqlDialect } from '../../schemas/warehouse-views.js';

/** Logical column type → PostgreSQL type. */
export const PG_TYPES: Readonly<Record<ColumnType, string>> = {
  string: 'text',
  integer: 'bigint',
  float: 'double precision',
  boolean: 'boolean',
  timestamp: 'timestamptz',
  json: 'jsonb',
};

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Quotes an identifier; only plain identifiers are accepted (names come from our specs and config). */
export function ident(name: string): string {
  if (!IDENT.test(name)) throw new Error(`not a plain SQL identifier: ${JSON.stringify(name)}`);
  return `"${name}"`;
}

/** SQL expression rendering a timestamptz as the warehouse's canonical ISO string. */
export const isoText = (expr: string) =>
  `to_char(${expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

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

export const systemTables = Object.values(SYSTEM_TABLES) as {
  name: SystemTableName;
  primaryKey: readonly string[];
  columns: readonly ColumnSpec[];
}[];

/** Columns staged per batch: the row's columns (`_synced_at` and `_deleted_at` are set by the merge). */
export function stagedColumns(spec: TableSpec<unknown>): ColumnSpec[] {
  return spec.columns.filter((c) => c.name !== '_synced_at' && c.name !== '_deleted_at');
}

/**
 * When the incoming row (EXCLUDED) replaces the stored one (t), by the table's merge rule: a strictly newer
 * version, or an equal one with different content; for content tables, different content. Content is
 * `_content_hash`; IS DISTINCT FROM makes a stored NULL (a row from before hashes) count as different.
 */
export function winsSql(spec: TableSpec<unknown>, repair = false): string {
  // A repair (full refresh) rewrites at an equal version whatever the stored hash says: the stored row may
  // differ from its hash (edited in place), and the refresh is there to make it equal to the source.
  const hashDiffers = repair ? 'TRUE' : 't."_content_hash" IS DISTINCT FROM EXCLUDED."_content_hash"';
  if (spec.merge.kind === 'content') return hashDiffers;
  const v = ident(spec.merge.column);
  return `(t.${v} < EXCLUDED.${v} OR (t.${v} = EXCLUDED.${v} AND ${hashDiffers}))`;
}

/**
 * The merge of a staged batch: insert new keys; on conflict replace the row only when the rule says the
 * incoming row wins (winsSql), or when the stored row is marked deleted (it came back). `$1` is the batch's
 * `_synced_at`. Returns (inserted, updated).
 */
export function mergeSql(schema: string, spec: TableSpec<unknown>, stage: string, repair = false): string {
  const target = `${ident(schema)}.${ident(spec.name)}`;
  const cols = stagedColumns(spec);
  const names = cols.map((c) => ident(c.name));
  const pk = spec.primaryKey.map(ident).join(', ');
  const insertCols = [...names, '"_synced_at"', ...(spec.tracksDeletion ? ['"_deleted_at"'] : [])];
  const selectCols = [...names, '$1::timestamptz', ...(spec.tracksDeletion ? ['NULL::timestamptz'] : [])];
  const nonKey = cols.filter((c) => !spec.primaryKey.includes(c.name)).map((c) => ident(c.name));
  const sets = [
    ...nonKey.map((n) => `${n} = EXCLUDED.${n}`),
    '"_synced_at" = EXCLUDED."_synced_at"',
    ...(spec.tracksDeletion ? ['"_deleted_at" = NULL'] : []),
  ];
  const wins = winsSql(spec, repair);
  const revived = spec.tracksDeletion ? ' OR t."_deleted_at" IS NOT NULL' : '';
  return `WITH merged AS (
  INSERT INTO ${target} AS t (${insertCols.join(', ')})
  SELECT ${selectCols.join(', ')} FROM ${ident(stage)} ORDER BY ${pk}
  ON CONFLICT (${pk}) DO UPDATE SET ${sets.join(', ')}
  WHERE ${wins}${revived}
  RETURNING (xmax = 0) AS inserted
)
SELECT count(*) FILTER (WHERE inserted)::int AS inserted, count(*) FILTER (WHERE NOT inserted)::int AS updated FROM merged`;
}

/** Refreshes `_synced_at` of rows received in this batch whose content did not change. */
export function touchSql(schema: string, spec: TableSpec<unknown>, stage: string): string {
  const target = `${ident(schema)}.${ident(spec.name)}`;
  const join = spec.primaryKey.map((k) => `t.${ident(k)} = s.${ident(k)}`).join(' AND ');
  return `UPDATE ${target} AS t SET "_synced_at" = $1::timestamptz FROM ${ident(stage)} AS s WHERE ${join} AND t."_synced_at" < $1::timestamptz`;
}

/** Moves `_synced_at` of live rows served again unchanged (`$2`, their ids) to the batch's stamp `$1`. */
export function seenSql(schema: string, spec: TableSpec<unknown>): string {
  if (spec.primaryKey.length !== 1) throw new Error(`seen ids need a single-column key (${spec.name})`);
  const live = spec.tracksDeletion ? ' AND "_deleted_at" IS NULL' : '';
  return `UPDATE ${ident(schema)}.${ident(spec.name)} SET "_synced_at" = $1::timestamptz WHERE ${ident(spec.primaryKey[0]!)} = ANY($2::text[]) AND "_synced_at" < $1::timestamptz${live}`;
}

// --- migrations -----------------------------------------------------------------------------------------

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** SQL text matching an ISO 8601 instant (what a timestamp column accepts; anything else stays NULL). */
const ISO_INSTANT = `'^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:?\\d{2})$'`;

/**
 * The value of `column` read from `_raw` along its path, converted to its type; NULL where `_raw`'s value
 * does not fit the type (a guard per type instead of a cast that would fail the whole migration).
 */
export function rawValueSql(column: ColumnSpec): string {
  const v = `("_raw" #> ARRAY[${column.path!.map(literal).join(', ')}]::text[])`;
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

// --- _rejected --------------------------------------------------------------------------------------------

/**
 * Upserts a batch's rejected items (`$2`: a JSON array of {table_name, item_key, …, raw}) with stamp `$1`:
 * a new entry is first seen now; a known one keeps first_seen_at, is seen once more and, if it had been
 * resolved, is open again.
 */
export function rejectedUpsertSql(schema: string): string {
  const target = `${ident(schema)}."_rejected"`;
  return `INSERT INTO ${target} AS t (table_name, item_key, item_id, stream, scope, page_cursor, reason, raw,
  first_seen_at, last_seen_at, times_seen, resolved_at)
SELECT r.table_name, r.item_key, r.item_id, r.stream, r.scope, r.page_cursor, r.reason, COALESCE(r.raw, 'null'::jsonb),
  $1::timestamptz, $1::timestamptz, 1, NULL
FROM jsonb_to_recordset($2::jsonb) AS r(table_name text, item_key text, item_id text, stream text, scope text,
  page_cursor text, reason text, raw jsonb)
ORDER BY r.table_name, r.item_key
ON CONFLICT (table_name, item_key) DO UPDATE SET item_id = EXCLUDED.item_id, stream = EXCLUDED.stream,
  scope = EXCLUDED.scope, page_cursor = EXCLUDED.page_cursor, reason = EXCLUDED.reason, raw = EXCLUDED.raw,
  last_seen_at = EXCLUDED.last_seen_at, times_seen = t.times_seen + 1, resolved_at = NULL`;
}

/** Condition on `_rejected`: open entries of table `$1` whose item id is a row of the staged batch. */
function storedAfterAll(spec: TableSpec<unknown>, stage: string): string {
  const id = ident(spec.primaryKey[0]!);
  return `table_name = $1 AND resolved_at IS NULL AND item_id IN (SELECT s.${id}::text FROM ${ident(stage)} s)`;
}

/** Whether the staged batch stores an item `_rejected` still holds open (a read: takes no row locks). */
export function hasOpenRejectedSql(schema: string, spec: TableSpec<unknown>, stage: string): string {
  return `SELECT EXISTS (SELECT 1 FROM ${ident(schema)}."_rejected" WHERE ${storedAfterAll(spec, stage)}) AS open`;
}

/** Resolves (stamp `$2`) the open `_rejected` entries of table `$1` whose item the staged batch stores. */
export function resolveRejectedSql(schema: string, spec: TableSpec<unknown>, stage: string): string {
  return `UPDATE ${ident(schema)}."_rejected" SET resolved_at = $2::timestamptz WHERE ${storedAfterAll(spec, stage)}`;
}

// --- COPY text format ------------------------------------------------------------------------------------

const NEEDS_ESCAPE = /[\\\n\r\t]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** Escapes a value for COPY's text format (backslash, newline, carriage return, tab). */
export function copyEscape(text: string): string {
  return NEEDS_ESCAPE.test(text) ? text.replace(/[\\\n\r\t]/g, (ch) => ESCAPES[ch]!) : text;
}

/** Renders one row as a COPY text-format line (`\N` for null, JSON for json columns). */
export function copyLine(columns: readonly ColumnSpec[], row: WarehouseRow): string {
  let line = '';
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i]!;
    const v = row[c.name];
    if (i > 0) line += '\t';
    if (v === null || v === undefined) {
      line += '\\N';
      continue;
    }
    switch (c.type) {
      case 'json':
        line += copyEscape(JSON.stringify(v));
        break;
      case 'boolean':
        line += v ? 't' : 'f';
        break;
      case 'integer':
      case 'float':
        line += String(v);
        break;
      default:
        line += copyEscape(String(v));
    }
  }
  return `${line}\n`;
}

// --- BI views ---------------------------------------------------------------------------------------------

/** The PostgreSQL rendering of the shared view definitions (schemas/warehouse-views.ts). */
export function postgresDialect(schema: string): SqlDialect {
  return {
    kind: 'postgres',
    table: (name) => `${ident(schema)}.${ident(name)}`,
    ident,
    string: (value) => `'${value.replaceAll("'", "''")}'`,
    secondsBetween: (later, earlier) =>
      `CAST(EXTRACT(EPOCH FROM (${later}) - (${earlier})) AS double precision)`,
    utcDay: (ts) => `to_char((${ts}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
    hasDailyTimeseries: (q) => `((${q}) ~* '\\mTIMESERIES\\s+day\\M')`,
    firstPathSegment: (text) => `split_part(${text}, '/', 1)`,
    timestamp: (iso) => `'${new Date(iso).toISOString()}'::timestamptz`,
    type: (t) => PG_TYPES[t],
  };
}
