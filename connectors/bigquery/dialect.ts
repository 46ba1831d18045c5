import type { ColumnType } from '../../schemas/warehouse.js';
import { ISO_DATE_OR_INSTANT } from '../../schemas/warehouse-views.js';
import type { Bind, WarehouseDialect } from '../sql/dialect.js';
import { quotePlainIdentifier, typeNamesOf } from '../sql/names.js';

/** Logical column type → BigQuery type. */
export const BQ_TYPES = typeNamesOf('bigquery');

export function bqIdent(name: string): string {
  return quotePlainIdentifier(name, '`', 'BigQuery');
}

// --- literals -------------------------------------------------------------------------------------------
// Scripts (multi-statement transactions) carry their values as literals: query parameters are not bound
// inside scripts by the emulator we test against, and literals are equally valid on the real service.

const PLAIN = /^[A-Za-z0-9 _\-:./+=@#]*$/;

/** A STRING literal that is exact for any text: plain text quoted, anything else base64-decoded. */
export function stringLiteral(value: string | null): string {
  if (value === null) return 'CAST(NULL AS STRING)';
  if (PLAIN.test(value)) return `'${value}'`;
  return `SAFE_CONVERT_BYTES_TO_STRING(FROM_BASE64('${Buffer.from(value, 'utf8').toString('base64')}'))`;
}

export function timestampLiteral(value: Date | null): string {
  return value === null ? 'CAST(NULL AS TIMESTAMP)' : `TIMESTAMP '${value.toISOString()}'`;
}

export function int64Literal(value: number): string {
  if (!Number.isSafeInteger(value)) throw new Error(`not an INT64: ${value}`);
  return `${value}`;
}

/** Binds a value into a script as its literal (see above: a script's values travel inline). */
export const bindLiteral: Bind = (value, type) => {
  switch (type) {
    case 'string_list':
      return `[${(value as readonly string[]).map((v) => stringLiteral(v)).join(', ')}]`;
    case 'string':
      return stringLiteral(value as string | null);
    case 'timestamp':
      return timestampLiteral(value === null ? null : new Date(value as string | Date));
    case 'integer':
      return value === null ? 'CAST(NULL AS INT64)' : int64Literal(value as number);
    case 'boolean':
      return value === null ? 'CAST(NULL AS BOOL)' : value === true ? 'TRUE' : 'FALSE';
    default:
      throw new Error(`no ${type} literal in scripts`);
  }
};

/**
 * What JSON_TYPE names (string, number, boolean, object, array, null), read off the value's JSON text: the
 * same on the service, and on the emulator we test against, whose JSON_TYPE names its own storage types.
 */
const jsonType = (v: string) => {
  const text = `TO_JSON_STRING(${v})`;
  return `CASE WHEN STARTS_WITH(${text}, '"') THEN 'string' WHEN STARTS_WITH(${text}, '{') THEN 'object'
  WHEN STARTS_WITH(${text}, '[') THEN 'array' WHEN ${text} IN ('true', 'false') THEN 'boolean'
  WHEN ${text} = 'null' THEN 'null' WHEN ${text} IS NOT NULL THEN 'number' END`;
};
const isType = (v: string, ...types: string[]) =>
  `(${jsonType(v)}) IN (${types.map((t) => `'${t}'`).join(', ')})`;
const isTimestampText = (v: string) =>
  `REGEXP_CONTAINS(JSON_VALUE(${v}), ${stringLiteral(ISO_DATE_OR_INSTANT)})`;

/** A JSON value as a column of `type`, never an error (SAFE_CAST: null where it does not fit). */
function jsonAs(v: string, type: ColumnType): string {
  switch (type) {
    case 'float':
    case 'integer':
    case 'boolean':
      return `IF(${isType(v, type === 'boolean' ? 'boolean' : 'number')}, SAFE_CAST(JSON_VALUE(${v}) AS ${BQ_TYPES[type]}), NULL)`;
    case 'timestamp':
      return `IF(${isType(v, 'string')} AND ${isTimestampText(v)}, SAFE_CAST(JSON_VALUE(${v}) AS TIMESTAMP), NULL)`;
    case 'string':
      return `CASE WHEN ${isType(v, 'string', 'number', 'boolean')} THEN JSON_VALUE(${v}) WHEN ${isType(v, 'object', 'array')} THEN TO_JSON_STRING(${v}) END`;
    case 'json':
      return `IF(${isType(v, 'null')}, NULL, ${v})`;
  }
}

/** BigQuery's rendering of the shared SQL (the BI views, the bookkeeping reads) for one dataset. */
export function bigQueryDialect(dataset: string): WarehouseDialect {
  const table = (name: string) => `${bqIdent(dataset)}.${bqIdent(name)}`;
  return {
    kind: 'bigquery',
    table,
    target: table,
    ownRows: () => '',
    storedKey: (key) => key,
    ident: bqIdent,
    string: (value) => stringLiteral(value),
    secondsBetween: (later, earlier) => `TIMESTAMP_DIFF(${later}, ${earlier}, MICROSECOND) / 1000000`,
    utcDay: (ts) => `CAST(DATE(${ts}, 'UTC') AS STRING)`,
    addDays: (ts, days) => `TIMESTAMP_ADD(${ts}, INTERVAL ${Math.trunc(days)} DAY)`,
    daySeries: (from, to) =>
      `SELECT TIMESTAMP(day) AS day_start FROM UNNEST(GENERATE_DATE_ARRAY(DATE(${from}, 'UTC'), DATE(${to}, 'UTC'))) AS day`,
    hasDailyTimeseries: (q) => `REGEXP_CONTAINS(UPPER(${q}), r'\\bTIMESERIES\\s+DAY\\b')`,
    firstPathSegment: (text) => `SPLIT(${text}, '/')[SAFE_OFFSET(0)]`,
    isHexDigest: (text) => `REGEXP_CONTAINS(${text}, r'^[0-9a-f]{64}$')`,
    timestamp: (iso) => timestampLiteral(new Date(iso)),
    type: (t) => BQ_TYPES[t],
    jsonElements: (json, alias) => `UNNEST(JSON_QUERY_ARRAY(${json})) AS ${bqIdent(alias)}`,
    // Member names are plain (our own keys): `$.name` needs no JSONPath quoting.
    jsonMember: (json, key) => `JSON_QUERY(${json}, '$.${bqIdent(key).slice(1, -1)}')`,
    jsonScalarText: (json) => `IF(${isType(json, 'string', 'number', 'boolean')}, JSON_VALUE(${json}), NULL)`,
    jsonValueClass: (json) => `CASE ${jsonType(json)}
  WHEN 'number' THEN 'number' WHEN 'boolean' THEN 'boolean'
  WHEN 'string' THEN IF(${isTimestampText(json)}, 'timestamp', 'text')
  WHEN 'object' THEN 'json' WHEN 'array' THEN 'json' END`,
    jsonAs,
    placeholder: (index) => `@p${index}`,
    isIn: (expr, list) => `${expr} IN UNNEST(${list})`,
    now: 'CURRENT_TIMESTAMP()',
    md5Hex: (text) => `TO_HEX(MD5(${text}))`,
    // A MERGE from a UNION ALL of parameter rows: notes and view names are arbitrary text, which the emulator
    // does not take as struct-array literals (and parameters are the clean way on the real service too).
    upsert: (name, key, columns, rows) => {
      const q = bqIdent;
      const source = rows
        .map((values) => `SELECT ${values.map((v, i) => `${v} AS ${q(columns[i]!)}`).join(', ')}`)
        .join(' UNION ALL ');
      const updates = columns.filter((c) => !key.includes(c)).map((c) => `${q(c)} = S.${q(c)}`);
      return `MERGE ${table(name)} T USING (${source}) S
ON ${key.map((k) => `T.${q(k)} = S.${q(k)}`).join(' AND ')}
WHEN MATCHED THEN UPDATE SET ${updates.join(', ')}
WHEN NOT MATCHED THEN INSERT (${columns.map(q).join(', ')}) VALUES (${columns.map((c) => `S.${q(c)}`).join(', ')})`;
    },
    mergeSource: (name, key, columns, source, update) => {
      const q = bqIdent;
      const { set, when } = update('S');
      return `MERGE ${table(name)} T USING (${source}) S
ON ${key.map((k) => `T.${q(k)} = S.${q(k)}`).join(' AND ')}
WHEN MATCHED AND (${when}) THEN UPDATE SET ${Object.entries(set)
        .map(([c, v]) => `${q(c)} = ${v}`)
        .join(', ')}
WHEN NOT MATCHED THEN INSERT (${columns.map(q).join(', ')}) VALUES (${columns.map((c) => `S.${q(c)}`).join(', ')})`;
    },
  };
}
