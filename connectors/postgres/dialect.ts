import type { WarehouseDialect } from '../sql/dialect.js';
import { quotePlainIdentifier, typeNamesOf } from '../sql/names.js';

/** Logical column type → PostgreSQL type. */
export const PG_TYPES = typeNamesOf('postgres');

/** Quotes an identifier; only plain identifiers are accepted (names come from our specs and config). */
export function ident(name: string): string {
  return quotePlainIdentifier(name, '"', 'SQL');
}

/** A string literal (standard-conforming strings: only the quote is doubled). */
export const stringLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** PostgreSQL's rendering of the shared SQL (the BI views, the bookkeeping reads) for one schema. */
export function postgresDialect(schema: string): WarehouseDialect {
  return {
    kind: 'postgres',
    table: (name) => `${ident(schema)}.${ident(name)}`,
    ident,
    string: stringLiteral,
    secondsBetween: (later, earlier) =>
      `CAST(EXTRACT(EPOCH FROM (${later}) - (${earlier})) AS double precision)`,
    utcDay: (ts) => `to_char((${ts}) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
    hasDailyTimeseries: (q) => `((${q}) ~* '\\mTIMESERIES\\s+day\\M')`,
    firstPathSegment: (text) => `split_part(${text}, '/', 1)`,
    timestamp: (iso) => `'${new Date(iso).toISOString()}'::timestamptz`,
    type: (t) => PG_TYPES[t],
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
  };
}
