import type { StreamCounts, ThreadsInput } from '../schemas/sync.js';
import { bookkeeping, pageActivities } from './activity-proxies.js';
import { continueAsNewIfSuggested } from './continue-as-new.js';
import { trackChildProgress } from './progress.js';

/**
 * Ticket threads for every ticket queued by the tickets stream (in the destination, so a crash loses no
 * queue entry). Each activity takes a batch; inside it every thread page is committed with its queue
 * entry, so a retry re-fetches only the pages that were in flight.
 */
export async function threadsWorkflow(input: ThreadsInput): Promise<StreamCounts> {
  const progress = trackChildProgress('queued threads', input.carried);
  for (;;) {
    const batch = await pageActivities.syncThreadBatch({
      batchSize: input.batchSize,
      concurrency: input.concurrency,
    });
    progress.pages += batch.pages;
    progress.rows += batch.rows;
    progress.detail = `${batch.remaining} threads queued`;
    if (batch.threads === 0 || batch.remaining === 0) break;
    await continueAsNewIfSuggested(input, progress);
  }
  if (input.fullRefreshSince) {
    await bookkeeping.finishThreads({ fullRefreshSince: input.fullRefreshSince });
  }
  return { pages: progress.pages, rows: progress.rows, windows: 1 };
}
