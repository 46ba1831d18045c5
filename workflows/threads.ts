import { condition, defineSignal, setHandler, sleep } from '@temporalio/workflow';
import type { StreamCounts, ThreadsInput } from '../schemas/sync.js';
import { bookkeeping, pageActivities } from './activity-proxies.js';
import { continueAsNewIfSuggested } from './continue-as-new.js';
import { trackChildProgress } from './progress.js';

/** The tickets stream finished listing: once the queue is empty, no more changed threads will come. */
export const ticketsListedSignal = defineSignal('ticketsListed');
/** Every other stream of the run is done: the rolling re-read stops at its per-run minimum. */
export const runIdleSignal = defineSignal('runIdle');

/** A thread deferred this often by one run (transient errors the client's retries did not overcome) fails. */
const MAX_DEFERRALS = 3;

/**
 * Ticket threads, from the queue in the destination (a crash loses no entry):
 *  1. every thread the tickets stream queues (new or changed tickets, the thread look-back), read while the
 *     tickets are still being listed — the parent signals `ticketsListed` when the listing is done;
 *  2. the rolling re-read: threads of unchanged tickets, oldest read first — at least `reverify.min` per
 *     run, more while the run's other streams are still busy (the detail budget would idle), never a
 *     thread this run already read. Changed threads never wait behind it: it starts after them.
 * Batches commit what they read; a thread that fails is isolated (see syncThreadBatch).
 */
export async function threadsWorkflow(input: ThreadsInput): Promise<StreamCounts> {
  const progress = trackChildProgress('queued threads', input.carried);
  let ticketsListed = !input.awaitTickets;
  let runIdle = false;
  setHandler(ticketsListedSignal, () => {
    ticketsListed = true;
  });
  setHandler(runIdleSignal, () => {
    runIdle = true;
  });
  let reverified = input.reverified;
  const deferrals = new Map<string, number>();
  let giveUp: { scope: string; error: string }[] = [];

  /** Reads queued threads until the queue is empty (and, with `untilListed`, the listing is done). */
  async function drain(untilListed: boolean): Promise<void> {
    for (;;) {
      const listedBefore = ticketsListed;
      const batch = await pageActivities.syncThreadBatch({
        batchSize: input.batchSize,
        concurrency: input.concurrency,
        giveUp,
      });
      giveUp = [];
      progress.pages += batch.pages;
      progress.rows += batch.rows;
      for (const d of batch.deferred) {
        const n = (deferrals.get(d.scope) ?? 0) + 1;
        deferrals.set(d.scope, n);
        if (n >= MAX_DEFERRALS) giveUp.push(d);
      }
      if (batch.retryAfterMs > 0) await sleep(batch.retryAfterMs);
      const empty = batch.threads === 0 || (batch.remaining === 0 && batch.deferred.length === 0);
      if (empty && (!untilListed || listedBefore) && giveUp.length === 0) return;
      if (batch.threads === 0 && untilListed && !listedBefore) {
        // The queue is empty for now: wait for the next tickets page (or the end of the listing).
        await condition(() => ticketsListed, '2 seconds');
      }
      await continueAsNewIfSuggested({ ...input, awaitTickets: !ticketsListed, reverified }, progress);
    }
  }

  progress.detail = 'changed threads';
  await drain(true);

  if (input.reverify) {
    const { min, runStartedAt } = input.reverify;
    while (reverified < min || !runIdle) {
      progress.detail = `re-reading unchanged threads (${reverified} this run)`;
      const { queued } = await bookkeeping.queueThreadsToReverify({
        limit: reverified < min ? Math.min(input.batchSize, min - reverified) : input.batchSize,
        verifiedBefore: runStartedAt,
      });
      if (queued === 0) break; // every thread was read by this run
      reverified += queued;
      await drain(false);
    }
  }

  if (input.fullRefreshSince) {
    await bookkeeping.finishThreads({ fullRefreshSince: input.fullRefreshSince });
  }
  return { pages: progress.pages, rows: progress.rows, windows: 1 };
}
