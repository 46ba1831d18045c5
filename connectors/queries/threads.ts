import { STREAMS, THREADS_STREAM } from '../../schemas/streams.js';
import type { SqlReader } from '../destination.js';

/**
 * The stored threads of more than `messages` live messages: ticket number (its thread-queue scope) → how
 * many it holds. The forecast counts their pages; every other thread takes one.
 */
export async function threadsLongerThan(reader: SqlReader, messages: number): Promise<Map<string, number>> {
  const rows = await reader.select(
    (d) =>
      `SELECT CAST(${d.ident('ticket_number')} AS ${d.type('string')}) AS scope, COUNT(*) AS messages ` +
      `FROM ${d.table(STREAMS[THREADS_STREAM].table)} WHERE ${d.ident('_deleted_at')} IS NULL ` +
      `GROUP BY ${d.ident('ticket_number')} HAVING COUNT(*) > ${messages}`,
  );
  return new Map(rows.map((r) => [String(r['scope']), Number(r['messages'])]));
}
