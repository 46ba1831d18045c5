import type { TableName } from '../../schemas/warehouse.js';
import { tableSpecOf } from '../../schemas/warehouse.js';
import type { SqlDialect } from '../../schemas/warehouse-views.js';
import type { SqlReader } from '../destination.js';

/*
 * How many live rows tables hold: one statement however many tables (a query on BigQuery bills 10 MB at
 * least, so two tables counted apart would cost twice).
 */

/** COUNT(*) of `table`'s live rows (rows marked deleted left out where the table tracks deletion). */
function liveCountSql(d: SqlDialect, table: TableName): string {
  const spec = tableSpecOf(table);
  return (
    `SELECT COUNT(*) AS n FROM ${d.table(spec.name)}` +
    (spec.tracksDeletion ? ` WHERE ${d.ident('_deleted_at')} IS NULL` : '')
  );
}

/**
 * The live rows of `tables` together; null when the reader answers nothing (a warehouse no sync prepared,
 * forecast/warehouse-reads.ts).
 */
export async function liveRowCount(reader: SqlReader, tables: readonly TableName[]): Promise<number | null> {
  const [row] = await reader.select((d) =>
    tables.length === 1
      ? liveCountSql(d, tables[0]!)
      : `SELECT ${tables.map((t) => `(${liveCountSql(d, t)})`).join(' + ')} AS n`,
  );
  return row === undefined ? null : Number(row['n'] ?? 0);
}

/** Live rows of `table` per UTC day of `dateColumn` (rows without a date left out), for the forecast. */
export async function liveRowsPerDay(
  reader: SqlReader,
  table: TableName,
  dateColumn: string,
): Promise<{ day: string; rows: number }[]> {
  const spec = tableSpecOf(table);
  const rows = await reader.select((d) => {
    const day = d.utcDay(d.ident(dateColumn));
    const live = spec.tracksDeletion ? ` AND ${d.ident('_deleted_at')} IS NULL` : '';
    return (
      `SELECT ${day} AS day, COUNT(*) AS items FROM ${d.table(spec.name)} ` +
      `WHERE ${d.ident(dateColumn)} IS NOT NULL${live} GROUP BY ${day}`
    );
  });
  return rows.map((r) => ({ day: String(r['day']), rows: Number(r['items']) }));
}
