import type { Destination } from '../connectors/destination.js';
import { Ticket } from '../schemas/api/tickets.js';
import { contentHashOf, restated, type StoredVersion } from '../schemas/warehouse.js';

/** A ticket row's input: the parsed item and the JSON object it came from. */
export interface TicketInput {
  item: Ticket;
  raw: Record<string, unknown>;
}

/** Ids of the listed tickets the warehouse holds at a newer version than the list serves. */
export function storedNewerIds(
  items: readonly Pick<Ticket, 'id' | 'updated_at'>[],
  stored: ReadonlyMap<string, StoredVersion>,
): string[] {
  return items
    .filter((t) => {
      const version = stored.get(t.id)?.version;
      return version != null && Date.parse(version) > Date.parse(t.updated_at);
    })
    .map((t) => t.id);
}

/**
 * The stored rows of `ids` derived again from their own `_raw` — the newest version the sync holds — through
 * the spec the destination writes with, where that gives other content than what is stored; by id.
 *
 * These are tickets the list serves at an older version than the warehouse holds (a detail read, such as
 * the audit's, stored a version the list does not show yet; or the source went back). The merge never
 * writes an older version over a newer one, so no read of the list rewrites such a row, and without this a
 * column policy set or widened since the row was written would never reach it. Written at the stored
 * version with other content, the re-derived row wins the merge (an equal version, another content hash).
 *
 * Inputs are marked `restated`: a field a hash rule already hashed stays as it is. What a drop rule removed
 * before cannot come back from `_raw`; a later version from the source brings it. A `_raw` the ticket schema
 * no longer reads is left as it is, for the same reason.
 */
export async function restatedTickets(
  destination: Destination,
  ids: readonly string[],
): Promise<Map<string, TicketInput>> {
  const out = new Map<string, TicketInput>();
  if (ids.length === 0) return out;
  const rows = await destination.liveRows('tickets', ['id', '_raw', '_content_hash'], {
    kind: 'in',
    column: 'id',
    values: ids,
  });
  const written = destination.writtenSpec('tickets');
  for (const row of rows) {
    const raw = typeof row['_raw'] === 'string' ? (JSON.parse(row['_raw']) as unknown) : row['_raw'];
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) continue;
    const parsed = Ticket.safeParse(raw);
    if (!parsed.success) continue;
    const input = restated({ item: parsed.data, raw: raw as Record<string, unknown> });
    if (contentHashOf('tickets', input, written) !== row['_content_hash']) out.set(String(row['id']), input);
  }
  return out;
}
