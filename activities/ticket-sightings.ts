import type { WriteBatch } from '../connectors/destination.js';
import type { Ticket } from '../schemas/api/tickets.js';

/**
 * What goes with every write of ticket rows: a sighting of each ticket's tracked state in
 * `ticket_observations` (the source of `ticket_history`), written in the same transaction, so a ticket row
 * never changes without the history seeing it — the sweep's pages and the audit's heals alike.
 */
export function ticketSightings(
  tickets: readonly Ticket[],
  observedAt: Date,
  how: { firstSeen: (id: string) => boolean; repair: boolean },
): WriteBatch<'ticket_observations'> {
  const observed_at = observedAt.toISOString();
  return {
    table: 'ticket_observations',
    rows: tickets.map((ticket) => ({
      ticket,
      observed_at,
      first_seen: how.firstSeen(ticket.id),
      repair: how.repair,
    })),
  };
}
