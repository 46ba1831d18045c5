import { defineSignal, setHandler } from '@temporalio/workflow';
import type { ThreadsInput } from '../schemas/child-inputs.js';
import type { StreamCounts } from '../schemas/run-summary.js';
import { THREADS_STREAM } from '../schemas/streams.js';
import { ThreadsLane } from './threads/lane.js';
import type { ParentSignals } from './threads/queue.js';
import { recordedWindow } from './window-ledger.js';

/** The tickets stream finished listing: once the queue is empty, no more changed threads will come. */
export const ticketsListedSignal = defineSignal('ticketsListed');
/** Every other stream of the run is done: the rolling re-read takes no further round. */
export const runIdleSignal = defineSignal('runIdle');

/**
 * Ticket threads, from the queue in the destination (a crash loses no entry), a batch of threads per activity
 * (activities/thread-batch.ts: read page after page, group-committed) on the detail task queue (the key's
 * budget paces it for the whole fleet), `concurrency` lanes at a time:
 *  1. every thread the tickets stream queues (new or changed tickets, the thread look-back), read while the
 *     tickets are still being listed — the parent signals `ticketsListed` when the listing is done;
 *  2. the rolling re-read: threads of unchanged tickets, oldest read first, in rounds of REVERIFY_ROUND,
 *     only on detail budget the run's other streams leave: while the listing goes on with nothing queued,
 *     and after it while those streams are still busy (until `runIdle`), at most `reverify.max` per run —
 *     and one round a run at least, so that every thread is re-read within ⌈threads / REVERIFY_ROUND⌉ runs
 *     even when no run leaves spare budget (a source without limits). Never a thread this run already read;
 *     changed threads wait behind at most one round.
 * A thread the batch hands back (anything but the plain case) is read one page per activity; a failing page
 * is retried alone; a thread that keeps failing is set aside (marked failed, retried by the
 * next run, shown by `status`) and the others go on. When every thread fails (an outage), the lanes stop
 * and one thread is retried patiently (up to SYNC_SOURCE_PATIENCE) until the source answers again.
 * The lane is `ThreadsLane` (workflows/threads/): the reader and its outage (`reader.ts`), the queue as the
 * lanes take from it (`queue.ts`), the re-read's budget (`reread.ts`).
 */
async function threadsWorkflowBody(input: ThreadsInput): Promise<StreamCounts> {
  const signals: ParentSignals = { ticketsListed: !input.awaitTickets, runIdle: input.runIdle };
  setHandler(ticketsListedSignal, () => {
    signals.ticketsListed = true;
  });
  setHandler(runIdleSignal, () => {
    signals.runIdle = true;
  });
  return new ThreadsLane(input, signals).run();
}

/** The window, with its own attempts in the ledger (workflows/window-ledger.ts). */
export async function threadsWorkflow(input: ThreadsInput) {
  return recordedWindow(
    { stream: THREADS_STREAM, windowStart: null, windowEnd: null, mode: input.mode },
    input,
    threadsWorkflowBody,
  );
}
