import { type TableName, tableSpecOf } from '../../schemas/warehouse.js';
import type { SqlReader } from '../destination.js';

/** A column whose newest value among a table's live rows is asked for, under a name of the caller's. */
export interface StampColumn {
  readonly name: string;
  readonly table: TableName;
  readonly column: string;
}

/**
 * The newest value of each stamp column among its table's live rows (name → value; null: no row). One
 * statement, an aggregate per table over one column (PostgreSQL has an index on each); on BigQuery it bills
 * at least 10 MB per table, so only an operator's `status` runs it, never the metrics.
 */
export async function newestLiveStamps(
  reader: SqlReader,
  stamps: readonly StampColumn[],
): Promise<Map<string, unknown>> {
  const rows = await reader.select((d) =>
    stamps
      .map(({ name, table, column }) => {
        const spec = tableSpecOf(table);
        const live = spec.tracksDeletion ? ` WHERE ${d.ident('_deleted_at')} IS NULL` : '';
        return `SELECT ${d.string(name)} AS stream, MAX(${d.ident(column)}) AS newest FROM ${d.table(spec.name)}${live}`;
      })
      .join(' UNION ALL '),
  );
  return new Map(rows.map((r) => [String(r['stream']), r['newest'] ?? null]));
}
