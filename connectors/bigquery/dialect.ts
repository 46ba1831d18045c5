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
    default:
      throw new Error(`no ${type} literal in scripts`);
  }
};

/** BigQuery's rendering of the shared SQL (the BI views, the bookkeeping reads) for one dataset. */
export function bigQueryDialect(dataset: string): WarehouseDialect {
  const table = (name: string) => `${bqIdent(dataset)}.${bqIdent(name)}`;
  return {
    kind: 'bigquery',
    table,
    ident: bqIdent,
    string: (value) => stringLiteral(value),
    secondsBetween: (later, earlier) => `TIMESTAMP_DIFF(${later}, ${earlier}, MICROSECOND) / 1000000`,
    utcDay: (ts) => `CAST(DATE(${ts}, 'UTC') AS STRING)`,
    hasDailyTimeseries: (q) => `REGEXP_CONTAINS(UPPER(${q}), r'\\bTIMESERIES\\s+DAY\\b')`,
    firstPathSegment: (text) => `SPLIT(${text}, '/')[SAFE_OFFSET(0)]`,
    timestamp: (iso) => timestampLiteral(new Date(iso)),
    type: (t) => BQ_TYPES[t],
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
  };
}
