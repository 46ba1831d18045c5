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
 * The merge of a staged batch: insert new keys; on conflict replace the row only when the rule says the
 * incoming row wins (strictly newer version, or different content), or when the stored row is marked
 * deleted (it came back). `$1` is the batch's `_synced_at`. Returns (inserted, updated).
 */
export function mergeSql(schema: string, spec: TableSpec<unknown>, stage: string): string {
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
  const wins =
    spec.merge.kind === 'version'
      ? `t.${ident(spec.merge.column)} < EXCLUDED.${ident(spec.merge.column)}`
      : `(${nonKey.map((n) => `t.${n}`).join(', ')}) IS DISTINCT FROM (${nonKey.map((n) => `EXCLUDED.${n}`).join(', ')})`;
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
