import { condition } from '@temporalio/workflow';
import type { ChildProgress } from '../../schemas/run-summary.js';
import { bookkeeping } from '../activity-proxies.js';
import type { RollingReread } from './reread.js';

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

/**
 * How long a drain waits for the next tickets page when the queue is empty while the tickets are listed:
 * short at first (the first page's threads are queued within a second of the run's start, and every lane
 * waits for them), doubling while the queue stays empty (a listing slower than the lanes costs a listing
 * and a timer per wait, not per fraction of a second).
 */
export const EMPTY_QUEUE_WAIT_MS = { first: 250, longest: 2000 } as const;

/** What the parent has told the threads child so far (its signals, or its input after a continue-as-new). */
export interface ParentSignals {
  /** The tickets stream finished listing: once the queue is empty, no more changed threads will come. */
  ticketsListed: boolean;
  /** Every other stream of the run is done: the rolling re-read takes no further round. */
  runIdle: boolean;
}

/** What one drain of the queue hears and shares while its lanes take threads. */
export interface DrainContext {
  readonly signals: ParentSignals;
  readonly reread: RollingReread;
  readonly progress: ChildProgress;
  /** Whether the drain waits for `ticketsListed` before it ends on an empty queue. */
  readonly untilListed: boolean;
  /** Whether the lanes are to stop taking threads (the workflow continues as new once they have). */
  readonly stopping: () => boolean;
}

/** A thread a lane has taken from the queue, with its entry's tag as listed. */
export interface TakenThread {
  readonly scope: string;
  readonly listedTag: string | undefined;
}

/**
 * The thread queue (in the destination) as the lanes of one drain take from it: one listing at a time for
 * every lane (the others wait for it), its entries handed out one by one, each claimed until its lane has
 * read it. When a listing finds the queue empty, this is where the drain decides what comes next: it ends,
 * or (while the tickets are still listed) queues a round of the re-read, or waits for the next tickets page.
 */
export class QueueDrain {
  readonly #context: DrainContext;
  #buffer: string[] = [];
  #refill: Promise<void> | null = null;
  #exhausted = false;
  // A thread is claimed (in flight) the moment a lane takes it from the buffer, not when the lane resumes: a
  // refill another lane starts in between would otherwise list it again and a second lane read it twice.
  readonly #inFlight = new Set<string>();
  // The listing hands each thread's queue entry tag to its lane, so the thread's first page reads its entry
  // from the listing's memory, not the warehouse (one checkpoint read per thread would be most of a
  // no-change run's BigQuery bill).
  readonly #listedTags = new Map<string, string>();
  #emptyWaitMs: number = EMPTY_QUEUE_WAIT_MS.first;

  constructor(context: DrainContext) {
    this.#context = context;
  }

  /** The threads lanes are reading now: a listing skips them. */
  get inFlight(): string[] {
    return [...this.#inFlight];
  }

  /**
   * The next threads for one of `lanes` lanes, claimed: a fair share of the buffer, at most THREADS_PER_BATCH;
   * null when the drain is over (or stopping).
   */
  async take(lanes: number): Promise<TakenThread[] | null> {
    for (;;) {
      if (this.#context.stopping()) return null;
      if (this.#buffer.length > 0) {
        const size = Math.min(THREADS_PER_BATCH, Math.ceil(this.#buffer.length / lanes));
        return this.#buffer.splice(0, size).map((scope) => this.#claim(scope));
      }
      if (this.#exhausted) return null;
      this.#refill ??= this.#list().finally(() => {
        this.#refill = null;
      });
      await this.#refill;
    }
  }

  #claim(scope: string): TakenThread {
    this.#inFlight.add(scope);
    const listedTag = this.#listedTags.get(scope);
    this.#listedTags.delete(scope);
    return { scope, listedTag };
  }

  /** Its lane has read the thread (or given it up). */
  release(scope: string): void {
    this.#inFlight.delete(scope);
  }

  /** After an outage: the queue is listed again (the threads left queued during it are read now). */
  resume(): void {
    this.#exhausted = false;
  }

  async #list(): Promise<void> {
    const { signals, reread, progress, untilListed } = this.#context;
    const listedBefore = signals.ticketsListed;
    const threads = await bookkeeping.listQueuedThreadCheckpoints({
      limit: THREAD_LISTING,
      skip: this.inFlight,
    });
    for (const t of threads) this.#listedTags.set(t.scope, t.tag);
    this.#buffer = threads.map((t) => t.scope);
    if (this.#buffer.length > 0) {
      this.#emptyWaitMs = EMPTY_QUEUE_WAIT_MS.first;
      return;
    }
    if (!untilListed || listedBefore) this.#exhausted = true;
    // The queue is empty for now, and the listing holds the run open: a round of the re-read (changed
    // threads queued meanwhile wait at most for it), or wait for the next tickets page.
    else if (!signals.ticketsListed && (await reread.round())) progress.detail = 're-reading while listing';
    else {
      await condition(() => signals.ticketsListed, this.#emptyWaitMs);
      this.#emptyWaitMs = Math.min(EMPTY_QUEUE_WAIT_MS.longest, this.#emptyWaitMs * 2);
    }
  }
}
