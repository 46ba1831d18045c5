import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  continueAsNew,
  defineSignal,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { REVERIFY_ROUND, type ThreadsInput } from '../schemas/child-inputs.js';
import type { StreamCounts } from '../schemas/run-summary.js';
import { STREAMS, THREADS_STREAM } from '../schemas/streams.js';
import {
  batchClassActivities,
  bookkeeping,
  classActivities,
  impatientClassActivities,
} from './activity-proxies.js';
import { innermostMessage, isWarehouseFailure } from './failures.js';
import { pageGuard } from './page-guard.js';
import { pageOptions } from './page-loop.js';
import { trackChildProgress } from './progress.js';
import { recordedWindow } from './window-ledger.js';

/** The tickets stream finished listing: once the queue is empty, no more changed threads will come. */
export const ticketsListedSignal = defineSignal('ticketsListed');
/** Every other stream of the run is done: the rolling re-read takes no further round. */
export const runIdleSignal = defineSignal('runIdle');

/**
 * Queue entries a listing hands the lanes. A listing costs the destination the same whatever it returns
 * (BigQuery reads the checkpoint tables whole: state-reads.ts), so it returns many; an entry is ~50 bytes
 * of history, held until a lane takes it.
 */
export const THREAD_LISTING = 1000;

/**
 * Threads a lane hands one activity (activities/thread-batch.ts): Temporal's cost of a task is paid once for
 * them, the warehouse's once per group commit. Fewer when the buffer holds less, so the lanes share the
 * last threads of a listing.
 */
export const THREADS_PER_BATCH = 50;

/** Threads failing one after the other, with no success between: the source is down, not one thread. */
const OUTAGE_AFTER_CONSECUTIVE_FAILURES = 5;

/**
 * Ticket threads, from the queue in the destination (a crash loses no entry), one page per activity on the
 * detail task queue (the key's budget paces it for the whole fleet), `concurrency` threads at a time:
 *  1. every thread the tickets stream queues (new or changed tickets, the thread look-back), read while the
 *     tickets are still being listed — the parent signals `ticketsListed` when the listing is done;
 *  2. the rolling re-read: threads of unchanged tickets, oldest read first, in rounds of REVERIFY_ROUND,
 *     only on detail budget the run's other streams leave: while the listing goes on with nothing queued,
 *     and after it while those streams are still busy (until `runIdle`), at most `reverify.max` per run —
 *     and one round a run at least, so that every thread is re-read within ⌈threads / REVERIFY_ROUND⌉ runs
 *     even when no run leaves spare budget (a source without limits). Never a thread this run already read;
 *     changed threads wait behind at most one round.
 * A failing page is retried alone; a thread that keeps failing is set aside (marked failed, retried by the
 * next run, shown by `status`) and the others go on. When every thread fails (an outage), the lanes stop
 * and one thread is retried patiently (up to SYNC_SOURCE_PATIENCE) until the source answers again.
 */
async function threadsWorkflowBody(input: ThreadsInput): Promise<StreamCounts> {
  const progress = trackChildProgress('queued threads', input.carried);
  const { routeClass } = STREAMS[THREADS_STREAM];
  const patient = classActivities(routeClass, { patienceMs: input.patienceMs });
  const impatient = impatientClassActivities(routeClass);
  const batches = batchClassActivities(routeClass, { patienceMs: input.patienceMs });
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
  // A thread is claimed (in flight) the moment a lane takes it from the buffer, not when the lane resumes: a
  // refill another lane starts in between would otherwise list it again and a second lane read it twice.
  const inFlight = new Set<string>();
  let staleLeft = true;
  /** Queues a round of the re-read if it may take one; whether it queued any thread. */
  async function reverifyRound(): Promise<boolean> {
    if (!input.reverify || !staleLeft || reverified >= input.reverify.max) return false;
    const { queued } = await bookkeeping.queueThreadsToReverify({
      limit: Math.min(REVERIFY_ROUND, input.reverify.max - reverified),
      verifiedBefore: input.reverify.runStartedAt,
    });
    reverified += queued;
    if (queued === 0) staleLeft = false; // every thread was read by this run
    return queued > 0;
  }
  const guard = pageGuard(THREADS_STREAM);

  // The listing hands each thread's queue entry tag to its lane, so the thread's first page reads its entry
  // from the listing's memory, not the warehouse (one checkpoint read per thread would be most of a
  // no-change run's BigQuery bill).
  /** Tags of the queue entries of the threads listed and not taken yet (listQueuedThreadCheckpoints). */
  const listed = new Map<string, string>();

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
        // A page that failed because the warehouse did says nothing of the thread: it is read on,
        // patiently, like every other stream's pages — never set aside, never counted towards an outage.
        if (isWarehouseFailure(err) && activities !== patient) {
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

  /**
   * Reads a run of threads in one activity; those it hands back (anything but the plain case), and every
   * thread of a batch that failed as a whole, are read on one page per activity (readThread).
   */
  async function readThreads(scopes: readonly string[]): Promise<void> {
    const threads = scopes.map((scope) => {
      const listedTag = listed.get(scope);
      listed.delete(scope);
      return listedTag === undefined ? { scope } : { scope, listedTag };
    });
    let left: readonly string[] = scopes;
    try {
      const report = await batches.syncThreadBatch({
        threads,
        repair: input.fullRefreshSince !== null,
        runId: input.runId,
      });
      progress.pages += report.pages;
      progress.rows += report.rows;
      progress.requests += report.requests;
      if (report.completed > 0) consecutiveFailures = 0;
      left = report.handedBack;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
    }
    for (const scope of left) {
      if (unavailableSince !== null) return; // left queued: read after the outage
      await readThread(scope, impatient);
    }
  }

  /** Waits out an outage: one queued thread retried patiently until the source answers (or patience ends). */
  async function awaitSource(): Promise<void> {
    const [probe] = await bookkeeping.listQueuedThreadCheckpoints({ limit: 1, skip: [...inFlight] });
    progress.detail = `source unavailable since ${unavailableSince}; retrying`;
    if (probe) {
      try {
        await readThread(probe.scope, patient, probe.tag);
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
          inFlight.add(scope);
          return scope;
        }
        if (exhausted) return null;
        refill ??= (async () => {
          const listedBefore = ticketsListed;
          const threads = await bookkeeping.listQueuedThreadCheckpoints({
            limit: THREAD_LISTING,
            skip: [...inFlight],
          });
          for (const t of threads) listed.set(t.scope, t.tag);
          buffer = threads.map((t) => t.scope);
          if (buffer.length === 0) {
            if (!untilListed || listedBefore) exhausted = true;
            // The queue is empty for now, and the listing holds the run open: a round of the re-read
            // (changed threads queued meanwhile wait at most for it), or wait for the next tickets page.
            else if (!ticketsListed && (await reverifyRound())) progress.detail = 're-reading while listing';
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
        const more = Math.min(THREADS_PER_BATCH, Math.ceil((buffer.length + 1) / input.concurrency)) - 1;
        const batch = [scope, ...buffer.splice(0, Math.max(0, more))];
        for (const s of batch) inFlight.add(s);
        try {
          await readThreads(batch);
        } finally {
          for (const s of batch) inFlight.delete(s);
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

  while (!runIdle || reverified === 0) {
    progress.detail = `re-reading unchanged threads (${reverified} this run)`;
    if (!(await reverifyRound())) break;
    await drain(false);
  }

  if (input.fullRefreshSince) {
    await bookkeeping.finishThreads({ fullRefreshSince: input.fullRefreshSince });
  }
  return { pages: progress.pages, rows: progress.rows, requests: progress.requests, windows: 1 };
}

/** The window, with its own attempts in the ledger (workflows/window-ledger.ts). */
export async function threadsWorkflow(input: ThreadsInput) {
  return recordedWindow(
    { stream: THREADS_STREAM, windowStart: null, windowEnd: null, mode: input.mode },
    input,
    threadsWorkflowBody,
  );
}
