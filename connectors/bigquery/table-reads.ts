import type { TableName } from '../../schemas/warehouse.js';
import type { DestinationSettings } from '../settings.js';
import type { BigQuerySession } from './session.js';

/*
 * Reads of a whole table without a query job (tabledata.list: no job, no bytes billed, no 10 MB floor):
 * what a small table costs less read than queried.
 */

/** The least a query bills (BigQuery on-demand pricing): a table under it costs less read than queried. */
export const MINIMUM_BILLED_BYTES = 10 * 1024 * 1024;

/** Rows a whole-table read takes at most (liveRows, auditSample): a larger table is queried instead. */
export const TABLE_READ_MAX_ROWS = 250_000;

/**
 * The live rows of a table, only `columns`, by a table read; null when it has over TABLE_READ_MAX_ROWS.
 * JSON columns parsed, as a query gives them.
 */
export async function liveRowsByTableRead(
  session: BigQuerySession,
  settings: DestinationSettings,
  table: TableName,
  columns: readonly string[],
  context: string,
): Promise<Record<string, unknown>[] | null> {
  const tracked = settings.spec(table).tracksDeletion;
  const rows = await session.withErrorMapping(context, () =>
    session.readTableUpTo(
      table,
      [...new Set([...columns, ...(tracked ? ['_deleted_at'] : [])])],
      TABLE_READ_MAX_ROWS,
    ),
  );
  if (rows === null) return null;
  // JSON columns come back as text from a table read; a query (parseJSON) gives them parsed.
  const json = new Set(
    settings
      .spec(table)
      .columns.filter((c) => c.type === 'json')
      .map((c) => c.name),
  );
  const cellOf = (r: Record<string, unknown>, c: string) => {
    const v = r[c] ?? null;
    if (!json.has(c) || typeof v !== 'string') return v;
    try {
      return JSON.parse(v) as unknown;
    } catch {
      return v;
    }
  };
  return rows
    .filter((r) => r['_deleted_at'] == null)
    .map((r) => Object.fromEntries(columns.map((c) => [c, cellOf(r, c)])));
}
