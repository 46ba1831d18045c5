import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  continueAsNew,
  defineSignal,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { STREAMS } from '../schemas/streams.js';
import { REVERIFY_ROUND, type StreamCounts, type ThreadsInput } from '../schemas/sync.js';
import { bookkeeping, classActivities, impatientClassActivities } from './activity-proxies.js';
import { innermostMessage, isWarehouseFailure } from './failures.js';
import { pageGuard } from './page-guard.js';
import { pageOptions } from './page-loop.js';
import { trackChildProgress } from './progress.js';
import { recordedWindow } from './window-ledger.js';

/** The tickets stream finished listing: once the queue is empty, no more changed threads will come. */
export const ticketsListedSignal = defineSignal('ticketsListed');
/** Every other stream of the run is done: the rolling re-read stops at its per-run minimum. */
export const runIdleSignal = defineSignal('runIdle');

/** Thread listings hand each thread's queue entry tag to its first page (listQueuedThreadCheckpoints). */
export const LISTED_CHECKPOINT_TAG_PATCH = 'threads-listed-checkpoint-tag';

/**
 * Queue entries a listing hands the lanes (threads-long-listings). A listing costs the destination the same
 * whatever it returns (BigQuery reads the checkpoint tables whole: state-reads.ts), so it returns many:
 * a 20,000-ticket first sync listed ~310 times at `concurrency × 4`, its reads growing with the tables —
 * two thirds of the emulator's time, and listings that outlasted their minute. At 1,000 an entry is ~50
 * bytes of history; the workflow holds them until its lanes take them.
 */
export const THREAD_LISTING = 1000;

/** Threads failing one after the other, with no success between: the source is down, not one thread. */
const OUTAGE_AFTER_CONSECUTIVE_FAILURES = 5;

/**
 * Ticket threads, from the queue in the destination (a crash loses no entry), one page per activity on the
 * detail task queue (the server paces it for the whole fleet), `concurrency` threads at a time:
 *  1. every thread the tickets stream queues (new or changed tickets, the thread look-back), read while the
 *     tickets are still being listed — the parent signals `ticketsListed` when the listing is done;
 *  2. the rolling re-read: threads of unchanged tickets, oldest read first, a few at a time while the
 *     listing goes on with nothing queued and, after it, while the run's other streams are still busy (the
 *     detail budget would idle), at most `reverify.min` per run; it stops when they are done (`runIdle`), so
 *     it holds the run open for one round at most (the one round a run it always reads). Never a thread this run already
 *     read. Changed threads wait behind at most one round of it (REVERIFY_ROUND threads). (Histories from before
 *     `reverify-spare-budget-only` re-read at least `reverify.min`, idle or not.)
 * A failing page is retried alone; a thread that keeps failing is set aside (marked failed, retried by the
 * next run, shown by `status`) and the others go on. When every thread fails (an outage), the lanes stop
 * and one thread is retried patiently (up to SYNC_SOURCE_PATIENCE) until the source answers again.
 */
async function threadsWorkflowBody(input: ThreadsInput): Promise<StreamCounts> {
  const progress = trackChildProgress('queued threads', input.carried);
  const { routeClass } = STREAMS.ticket_messages;
  const patient = classActivities(routeClass, { patienceMs: input.patienceMs });
  const impatient = impatientClassActivities(routeClass);
  let ticketsListed = !input.awaitTickets;
  let runIdle = input.runIdle;
  setHandler(ticketsListedSignal, () => {
    ticketsListed = true;
  });
  setHandler(runIdleSignal, () => {
    runIdle = true;
  });
  let reverified = input.reverified;
  let consecutiveFailures = 0;
  let unavailableSince: string | null = null;
  let stopping = false;
  const inFlight = new Set<string>();
  // A thread is claimed (in flight) the moment a lane takes it from the buffer, not when the lane resumes: a
  // refill another lane starts in between would otherwise list it again and a second lane read it twice
  // (measured: 6 of 150 threads in a first sync without limits). patched: older histories read without it.
  const claimOnTake = patched('threads-claim-on-take');
  // The rolling re-read spends only spare detail budget (issue 22): while the listing goes on with nothing
  // queued, and after it while the run's other streams are busy; never after. patched: older histories
  // re-read at least `reverify.min` after the listing, idle or not.
  const spareOnly = input.reverify ? patched('reverify-spare-budget-only') : false;
  let staleLeft = true;
  /** Queues a round of the re-read if it may take one; whether it queued any thread. */
  async function reverifyRound(): Promise<boolean> {
    if (!input.reverify || !staleLeft || reverified >= input.reverify.min) return false;
    const { queued } = await bookkeeping.queueThreadsToReverify({
      limit: Math.min(REVERIFY_ROUND, input.reverify.min - reverified),
      verifiedBefore: input.reverify.runStartedAt,
    });
    reverified += queued;
    if (queued === 0) staleLeft = false; // every thread was read by this run
    return queued > 0;
  }
  const guard = pageGuard('ticket_messages');

  // The listing hands each thread's queue entry tag to its lane, so the thread's first page reads its entry
  // from the listing's memory, not the warehouse (issue 21: one checkpoint read per thread was most of a
  // no-change run's BigQuery bill). patched: older histories list scopes alone.
  const listedTags = patched(LISTED_CHECKPOINT_TAG_PATCH);
  /** Tags of the queue entries of the threads listed and not taken yet (listQueuedThreadCheckpoints). */
  const listed = new Map<string, string>();

  // A page that failed because the warehouse did (a DestinationError) says nothing of the thread: it is read
  // on, patiently, like every other stream's pages — never set aside for it, and never counted towards an
  // outage of the source (a BigQuery emulator's transient 500s once left a thread failed and the run
  // incomplete). patched: older histories set such a thread aside.
  const patientWithWarehouse = patched('threads-patient-with-warehouse');

  // Listings of THREAD_LISTING entries. patched: older histories listed `concurrency × 4` (at least 50).
  const listingLimit = patched('threads-long-listings')
    ? THREAD_LISTING
    : Math.max(50, input.concurrency * 4);

  /** Reads one thread to its end; false if it was set aside. `listedTag`: its entry's tag as listed. */
  async function readThread(scope: string, given: typeof patient, listedTag?: string): Promise<boolean> {
    let first = true;
    let activities = given;
    for (;;) {
      try {
        const options = pageOptions(guard, scope, input.fullRefreshSince !== null);
        // The first page names the entry as listed (newer than any cursor an earlier read of it saw here).
        const { afterCursorTag: _earlier, ...always } = options;
        const page = await activities.syncThreadPage({
          scope,
          ...(first && listedTag !== undefined ? { ...always, listedTag } : options),
          runId: input.runId,
        });
        first = false;
        guard.observe(scope, page);
        progress.pages += page.pages;
        progress.rows += page.rows;
        progress.requests += page.requests;
        consecutiveFailures = 0;
        if (page.done) return true;
      } catch (err) {
        if (err instanceof ApplicationFailure && err.type === 'CursorLoop') {
          // One thread whose cursor loops fails alone, like a thread the API refuses.
          await bookkeeping.markThreadFailed({ scope, error: err.message, runId: input.runId });
          return false;
        }
        if (!(err instanceof ActivityFailure)) throw err;
        if (patientWithWarehouse && isWarehouseFailure(err) && activities !== patient) {
          activities = patient;
          continue;
        }
        consecutiveFailures += 1;
        if (unavailableSince === null && consecutiveFailures >= OUTAGE_AFTER_CONSECUTIVE_FAILURES) {
          unavailableSince = new Date().toISOString();
        }
        const permanent = err.cause instanceof ApplicationFailure && err.cause.nonRetryable;
        if (unavailableSince !== null && !permanent) return false; // left queued: read after the outage
        await bookkeeping.markThreadFailed({ scope, error: innermostMessage(err), runId: input.runId });
        return false;
      }
    }
  }

  /** Waits out an outage: one queued thread retried patiently until the source answers (or patience ends). */
  async function awaitSource(): Promise<void> {
    const [probe] = await bookkeeping.listQueuedThreads({ limit: 1, skip: [...inFlight] });
    progress.detail = `source unavailable since ${unavailableSince}; retrying`;
    if (probe) {
      try {
        await readThread(probe, patient);
      } catch (err) {
        throw ApplicationFailure.nonRetryable(
          `source unavailable since ${unavailableSince}: ${innermostMessage(err)}`,
          'SourceUnavailable',
        );
      }
    }
    unavailableSince = null;
    consecutiveFailures = 0;
  }

  /** Reads queued threads, `concurrency` lanes, until the queue is empty (and, with `untilListed`, listed). */
  async function drain(untilListed: boolean): Promise<void> {
    let buffer: string[] = [];
    let refill: Promise<void> | null = null;
    let exhausted = false;
    const next = async (): Promise<string | null> => {
      for (;;) {
        if (stopping) return null;
        const scope = buffer.shift();
        if (scope !== undefined) {
          if (claimOnTake) inFlight.add(scope);
          return scope;
        }
        if (exhausted) return null;
        refill ??= (async () => {
          const listedBefore = ticketsListed;
          const request = { limit: listingLimit, skip: [...inFlight] };
          let scopes: string[];
          if (listedTags) {
            const threads = await bookkeeping.listQueuedThreadCheckpoints(request);
            for (const t of threads) listed.set(t.scope, t.tag);
            scopes = threads.map((t) => t.scope);
          } else scopes = await bookkeeping.listQueuedThreads(request);
          buffer = scopes;
          if (scopes.length === 0) {
            if (!untilListed || listedBefore) exhausted = true;
            // The queue is empty for now, and the listing holds the run open: a round of the re-read
            // (changed threads queued meanwhile wait at most for it), or wait for the next tickets page.
            else if (spareOnly && !ticketsListed && (await reverifyRound()))
              progress.detail = 're-reading while listing';
            else await condition(() => ticketsListed, '2 seconds');
          }
        })().finally(() => {
          refill = null;
        });
        await refill;
      }
    };
    const lane = async (): Promise<void> => {
      for (;;) {
        if (unavailableSince !== null) return;
        const scope = await next();
        if (scope === null) return;
        inFlight.add(scope);
        const listedTag = listed.get(scope);
        listed.delete(scope);
        try {
          await readThread(scope, impatient, listedTag);
        } finally {
          inFlight.delete(scope);
        }
        if (workflowInfo().continueAsNewSuggested) stopping = true;
      }
    };
    for (;;) {
      await Promise.all(Array.from({ length: input.concurrency }, lane));
      if (stopping) {
        // Every lane has finished its thread: the queue (in the destination) says where to go on.
        await continueAsNew<typeof threadsWorkflow>({
          ...input,
          awaitTickets: !ticketsListed,
          runIdle,
          reverified,
          carried: { pages: progress.pages, rows: progress.rows, requests: progress.requests },
        });
      }
      if (unavailableSince === null) return;
      await awaitSource();
      exhausted = false;
    }
  }

  progress.detail = 'changed threads';
  await drain(true);

  if (spareOnly) {
    // The re-read only spends what the run's other streams leave of the detail budget, and never holds the
    // run open (issue 22: a no-change run of 250 tickets took 172 s, all of it re-reading): small rounds
    // while they are busy, none after — but one round a run at least, so that every thread is re-read within
    // ⌈threads / REVERIFY_ROUND⌉ runs even when no run leaves spare budget (a source without limits, whose
    // streams finish in seconds). `min` (SYNC_THREAD_REVERIFY_PER_RUN) is now the most per run.
    while (!runIdle || reverified === 0) {
      progress.detail = `re-reading unchanged threads (${reverified} this run)`;
      if (!(await reverifyRound())) break;
      await drain(false);
    }
  } else if (input.reverify) {
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
  return { pages: progress.pages, rows: progress.rows, requests: progress.requests, windows: 1 };
}

/** The window, with its own attempts in the ledger (workflows/window-ledger.ts). */
export async function threadsWorkflow(input: ThreadsInput) {
  return recordedWindow(
    { stream: 'ticket_messages', windowStart: null, windowEnd: null, mode: input.mode ?? 'incremental' },
    input,
    threadsWorkflowBody,
  );
}
