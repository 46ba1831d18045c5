import { PAGE_FETCHERS } from '../activities/fetchers.js';
import type { SupportApiClient } from '../connectors/support-api/index.js';
import type { Ticket } from '../schemas/api/tickets.js';

/** What the forecast keeps of a listed ticket. */
export type SweptTicket = Pick<Ticket, 'id' | 'ticket_number' | 'created_at' | 'updated_at'>;

/** One page of the ticket list as the run will read it (same fetcher, same page size). */
export interface SweptPage {
  readonly tickets: readonly SweptTicket[];
  readonly hasMore: boolean;
}

/**
 * Lists the whole ticket list once, page by page, with the run's own fetcher and page size: the list
 * budget only (`GET /tickets`), nothing of the detail class. The pages are those the run's sweep will read
 * (give or take tickets created meanwhile); `onPage` hears of each one (progress).
 */
export async function sweepTicketList(
  client: SupportApiClient,
  pageSize: number,
  onPage?: (pages: number, tickets: number) => void,
): Promise<SweptPage[]> {
  const pages: SweptPage[] = [];
  let listed = 0;
  let cursor: string | null = null;
  for (;;) {
    const page = await PAGE_FETCHERS.tickets(client, { limit: pageSize }, cursor);
    const tickets = (page.items as Ticket[]).map(({ id, ticket_number, created_at, updated_at }) => ({
      id,
      ticket_number,
      created_at,
      updated_at,
    }));
    pages.push({ tickets, hasMore: page.hasMore });
    listed += tickets.length;
    onPage?.(pages.length, listed);
    if (!page.hasMore || page.nextCursor === null) return pages;
    cursor = page.nextCursor;
  }
}

/** The oldest `created_at` of the list (its last page's last ticket: the list is newest first). */
export function oldestCreatedAt(pages: readonly SweptPage[]): string | null {
  for (let i = pages.length - 1; i >= 0; i--) {
    const last = pages[i]!.tickets.at(-1);
    if (last) return last.created_at;
  }
  return null;
}
