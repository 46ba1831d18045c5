import type { StreamCounts, TicketsInput } from '../schemas/sync.js';
import { bookkeeping, pageActivities } from './activity-proxies.js';
import { continueAsNewIfSuggested } from './continue-as-new.js';
import { trackChildProgress } from './progress.js';

/**
 * Tickets, newest first (the API's only order), one page per activity. Incremental: page until below
 * `since` (high-water mark minus look-back). Full refresh: everything, then tickets not seen are marked
 * deleted. Each page also queues the threads to fetch (new or changed tickets, and tickets created inside
 * the thread look-back) in the same destination transaction, for the ticket_messages stream.
 */
export async function ticketsWorkflow(input: TicketsInput): Promise<StreamCounts> {
  const progress = trackChildProgress(input.since ? `since ${input.since}` : 'full refresh', input.carried);
  const scope = `tickets:${input.since ?? 'all'}/${input.before}`;
  for (;;) {
    const page = await pageActivities.syncTicketsPage({
      scope,
      since: input.since,
      pageSize: input.pageSize,
      threadLookbackMs: input.threadLookbackMs,
      runStartedAt: input.before,
    });
    progress.pages += 1;
    progress.rows += page.rows;
    if (page.done) break;
    await continueAsNewIfSuggested(input, progress);
  }
  await bookkeeping.finishTickets({
    scope,
    deletionSince: input.since === null ? input.deletionSince : null,
  });
  return { pages: progress.pages, rows: progress.rows, windows: 1 };
}
