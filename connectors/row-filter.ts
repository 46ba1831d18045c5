import type { SqlDialect } from '../schemas/warehouse-views.js';

/**
 * Which rows of a table a read wants, in the two readings a warehouse may need: as SQL (a query) and as a
 * test of a row in memory (a table read, BigQuery's way of reading a small table without a bill). Kept
 * side by side so they agree: `in` compares values as text (ids, ticket numbers); `range` is
 * `from <= column < until` on a timestamp, a null column outside it, as in SQL.
 */
export type RowFilter =
  | { readonly kind: 'in'; readonly column: string; readonly values: readonly (string | number)[] }
  | { readonly kind: 'range'; readonly column: string; readonly from: string; readonly until: string };

/** The filter as a condition on the table aliased `t` (`1 = 0` for an empty list). */
export function rowFilterSql(d: SqlDialect, filter: RowFilter): string {
  const column = `t.${d.ident(filter.column)}`;
  if (filter.kind === 'range')
    return `${column} >= ${d.timestamp(filter.from)} AND ${column} < ${d.timestamp(filter.until)}`;
  if (filter.values.length === 0) return '1 = 0';
  const values = filter.values.map((v) => (typeof v === 'number' ? String(v) : d.string(v)));
  return `${column} IN (${values.join(', ')})`;
}

/**
 * Whether a row read whole passes the filter. Timestamps compare at the millisecond: a stored value's
 * microseconds, truncated, leave `>=` and `<` against whole milliseconds as SQL decides them.
 */
export function rowMatches(filter: RowFilter, row: Readonly<Record<string, unknown>>): boolean {
  const value = row[filter.column];
  if (value === null || value === undefined) return false;
  if (filter.kind === 'in') return filter.values.some((v) => String(v) === String(value));
  const at = Date.parse(String(value));
  return at >= Date.parse(filter.from) && at < Date.parse(filter.until);
}
