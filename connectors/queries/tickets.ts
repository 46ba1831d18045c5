import type { SqlReader } from '../destination.js';

/** When the oldest ticket the warehouse holds was created (deleted ones too); null when it holds none. */
export async function oldestTicketCreatedAt(reader: SqlReader): Promise<string | null> {
  const [row] = await reader.select(
    (d) => `SELECT MIN(${d.ident('created_at')}) AS oldest FROM ${d.table('tickets')}`,
  );
  const oldest = row?.['oldest'];
  return oldest === null || oldest === undefined ? null : String(oldest);
}
