import { escapeLiteral } from 'pg';
import type { ColumnType } from '../../schemas/warehouse.js';
import { ISO_DATE_OR_INSTANT } from '../../schemas/warehouse-views.js';
import type { WarehouseDialect } from '../sql/dialect.js';
import { quotePlainIdentifier, typeNamesOf } from '../sql/names.js';

/** Logical column type → PostgreSQL type. */
export const PG_TYPES = typeNamesOf('postgres');

/** Quotes an identifier; only plain identifiers are accepted (names come from our specs and config). */
export function ident(name: string): string {
  return quotePlainIdentifier(name, '"', 'SQL');
}

/**
 * A string literal of any text (source data included: custom-field keys and labels reach view definitions
 * and comments), by `pg`'s escapeLiteral: quotes doubled, and a text with a backslash written as an E''
 * string with the backslash doubled, so it reads the same whether `standard_conforming_strings` is on or
 * off (a database or role may turn it off; a plain '' string would then take a backslash as an escape).
 */
export const stringLiteral = (text: string): string => escapeLiteral(text);

/** The text of a JSON scalar (`#>> '{}'`: a string without its quotes). */
const scalar = (v: string) => `(${v} #>> '{}')`;
const isType = (v: string, ...types: string[]) =>
  `jsonb_typeof(${v}) IN (${types.map((t) => `'${t}'`).join(', ')})`;

/**
 * A JSON value as a column of `type`, never an error: each cast runs only on a value of its JSON type, and a
 * timestamp only on a string the SQL/JSON `datetime()` method reads (silently: null for `2026-02-31`), a date
 * read as midnight UTC.
 */
function jsonAs(v: string, type: ColumnType): string {
  switch (type) {
    case 'float':
      return `CASE WHEN ${isType(v, 'number')} THEN ${scalar(v)}::double precision END`;
    case 'integer': {
      const n = `${scalar(v)}::numeric`;
      return `CASE WHEN ${isType(v, 'number')} THEN CASE WHEN ${n} = trunc(${n}) AND abs(${n}) < 9e18 THEN ${n}::bigint END END`;
    }
    case 'boolean':
      return `CASE WHEN ${isType(v, 'boolean')} THEN ${scalar(v)}::boolean END`;
    case 'timestamp':
      return `CASE WHEN ${isType(v, 'string')} AND ${scalar(v)} ~ ${stringLiteral(ISO_DATE_OR_INSTANT)}
  AND jsonb_path_query_first(${v}, '$.datetime()', '{}', true) IS NOT NULL
  THEN (CASE WHEN length(${scalar(v)}) = 10 THEN ${scalar(v)} || 'T00:00:00Z' ELSE ${scalar(v)} END)::timestamptz END`;
    case 'string':
      return `CASE WHEN ${isType(v, 'string', 'number', 'boolean')} THEN ${scalar(v)} WHEN ${isType(v, 'object', 'array')} THEN ${v}::text END`;
    case 'json':
      return `NULLIF(${v}, 'null'::jsonb)`;
  }
}

/** PostgreSQL's rendering of the shared SQL (the BI views, the bookkeeping reads) for one schema. */
export function postgresDialect(schema: string): WarehouseDialect {
  return {
    kind: 'postgres',
    table: (name) => `${ident(schema)}.${ident(name)}`,
    target: (name) => `${ident(schema)}.${ident(name)}`,
    ownRows: () => '',
    storedKey: (key) => key,
    ident,
    string: stringLiteral,
    secondsBetween: (later, earlier) =>
      `CAST(EXTRACT(EPOCH FROM (${later}) - (${earlier})) AS double precision)`,
    utcDay: (ts) => `to_char((${ts}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
    addDays: (ts, days) => `((${ts}) + interval '${Math.trunc(days)} day')`,
    daySeries: (from, to) =>
      `SELECT generate_series(date_trunc('day', (${from}) AT TIME ZONE 'UTC'), date_trunc('day', (${to}) AT TIME ZONE 'UTC'), interval '1 day') AT TIME ZONE 'UTC' AS day_start`,
    hasDailyTimeseries: (q) => `((${q}) ~* '\\mTIMESERIES\\s+day\\M')`,
    firstPathSegment: (text) => `split_part(${text}, '/', 1)`,
    isHexDigest: (text) => `(${text} ~ '^[0-9a-f]{64}$')`,
    timestamp: (iso) => `'${new Date(iso).toISOString()}'::timestamptz`,
    type: (t) => PG_TYPES[t],
    jsonElements: (json, alias) =>
      `jsonb_array_elements(CASE WHEN jsonb_typeof(${json}) = 'array' THEN ${json} END) AS ${ident(alias)}`,
    jsonMember: (json, key) => `(${json} -> ${stringLiteral(key)})`,
    jsonScalarText: (json) =>
      `CASE WHEN ${isType(json, 'string', 'number', 'boolean')} THEN ${scalar(json)} END`,
    jsonValueClass: (json) => `CASE jsonb_typeof(${json})
  WHEN 'number' THEN 'number' WHEN 'boolean' THEN 'boolean'
  WHEN 'string' THEN CASE WHEN ${scalar(json)} ~ ${stringLiteral(ISO_DATE_OR_INSTANT)} THEN 'timestamp' ELSE 'text' END
  WHEN 'object' THEN 'json' WHEN 'array' THEN 'json' END`,
    jsonAs,
    // Typed, so a NULL or a text array never leaves PostgreSQL guessing.
    placeholder: (index, type) => `$${index + 1}::${type === 'string_list' ? 'text[]' : PG_TYPES[type]}`,
    isIn: (expr, list) => `${expr} = ANY(${list})`,
    now: 'now()',
    md5Hex: (text) => `md5(${text})`,
    upsert: (table, key, columns, rows) => {
      const names = columns.map(ident);
      const updates = columns
        .filter((c) => !key.includes(c))
        .map((c) => `${ident(c)} = EXCLUDED.${ident(c)}`);
      return `INSERT INTO ${ident(schema)}.${ident(table)} (${names.join(', ')})
VALUES ${rows.map((values) => `(${values.join(', ')})`).join(',\n  ')}
ON CONFLICT (${key.map(ident).join(', ')}) DO UPDATE SET ${updates.join(', ')}`;
    },
    // Rows go in key order, so concurrent writers lock the keys they share in one order (no deadlock).
    mergeSource: (table, key, columns, source, update) => {
      const { set, when } = update('EXCLUDED');
      const names = columns.map(ident).join(', ');
      return `INSERT INTO ${ident(schema)}.${ident(table)} AS T (${names})
SELECT ${names} FROM (${source}) AS S ORDER BY ${key.map(ident).join(', ')}
ON CONFLICT (${key.map(ident).join(', ')}) DO UPDATE SET ${Object.entries(set)
        .map(([c, v]) => `${ident(c)} = ${v}`)
        .join(', ')}
WHERE ${when}`;
    },
  };
}
