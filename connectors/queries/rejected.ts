import type { SqlReader } from '../destination.js';

/*
 * Items set aside in `_rejected` and not stored since, item by item (their counts per table, stream and scope:
 * Bookkeeping.openRejections).
 */

/**
 * Every open item (table_name, item_key, stream, scope, reason, times_seen, last_seen_at), the most recently
 * seen first.
 */
export function openRejectedItems(reader: SqlReader): Promise<Record<string, unknown>[]> {
  return reader.select(
    (d) =>
      `SELECT ${d.ident('table_name')} AS table_name, ${d.ident('item_key')} AS item_key, ${d.ident('stream')} AS stream, ` +
      `${d.ident('scope')} AS scope, ${d.ident('reason')} AS reason, ${d.ident('times_seen')} AS times_seen, ` +
      `${d.ident('last_seen_at')} AS last_seen_at FROM ${d.table('_rejected')} WHERE ${d.ident('resolved_at')} IS NULL ` +
      `ORDER BY ${d.ident('last_seen_at')} DESC`,
  );
}

/**
 * The open items of `tables` with the item as the source served it (`raw`: an object, or its JSON text
 * where the warehouse returns it so).
 */
export async function openRejectedRaw(
  reader: SqlReader,
  tables: readonly string[],
): Promise<{ table_name: string; raw: unknown }[]> {
  const rows = await reader.select(
    (d) =>
      `SELECT ${d.ident('table_name')} AS table_name, ${d.ident('raw')} AS raw FROM ${d.table('_rejected')} ` +
      `WHERE ${d.ident('resolved_at')} IS NULL AND ${d.ident('table_name')} IN (${tables.map((t) => d.string(t)).join(', ')})`,
  );
  return rows.map((r) => ({ table_name: String(r['table_name']), raw: r['raw'] }));
}
