import { continueAsNew, workflowInfo } from '@temporalio/workflow';
import type { ThreadsInput } from '../../schemas/child-inputs.js';
import type { ChildProgress, StreamCounts } from '../../schemas/run-summary.js';
import { bookkeeping } from '../activity-proxies.js';
import { trackChildProgress } from '../progress.js';
import type { threadsWorkflow } from '../threads.js';
import { type ParentSignals, QueueDrain } from './queue.js';
import { ThreadReader } from './reader.js';
import { RollingReread } from './reread.js';

/**
 * The threads child's lane (workflows/threads.ts says what it reads and when): the changed threads first,
 * drained while the tickets are listed, then rounds of the rolling re-read while the run's other streams are
 * busy, each round drained before the next is queued. Every drain runs `concurrency` lanes over one
 * QueueDrain; a drain the history has grown too long for ends with a continue-as-new once every lane has
 * finished its thread, and a drain an outage stopped waits for the source, then goes on.
 */
export class ThreadsLane {
  readonly #input: ThreadsInput;
  readonly #signals: ParentSignals;
  readonly #progress: ChildProgress;
  readonly #reader: ThreadReader;
  readonly #reread: RollingReread;
  #stopping = false;

  constructor(input: ThreadsInput, signals: ParentSignals) {
    this.#input = input;
    this.#signals = signals;
    this.#progress = trackChildProgress('queued threads', input.carried);
    this.#reader = new ThreadReader(input, this.#progress);
    this.#reread = new RollingReread(input);
  }

  async run(): Promise<StreamCounts> {
    const progress = this.#progress;
    progress.detail = 'changed threads';
    await this.#drain(true);
    // One round a run at least, so every thread is re-read within ⌈threads / REVERIFY_ROUND⌉ runs.
    while (!this.#signals.runIdle || this.#reread.reverified === 0) {
      progress.detail = `re-reading unchanged threads (${this.#reread.reverified} this run)`;
      if (!(await this.#reread.round())) break;
      await this.#drain(false);
    }
    if (this.#input.fullRefreshSince) {
      await bookkeeping.finishThreads({ fullRefreshSince: this.#input.fullRefreshSince });
    }
    return { pages: progress.pages, rows: progress.rows, requests: progress.requests, windows: 1 };
  }

  /** Reads queued threads, `concurrency` lanes, until the queue is empty (and, with `untilListed`, listed). */
  async #drain(untilListed: boolean): Promise<void> {
    const queue = new QueueDrain({
      signals: this.#signals,
      reread: this.#reread,
      progress: this.#progress,
      untilListed,
      stopping: () => this.#stopping,
    });
    for (;;) {
      await Promise.all(Array.from({ length: this.#input.concurrency }, () => this.#lane(queue)));
      if (this.#stopping) await this.#continueAsNew();
      if (this.#reader.unavailableSince === null) return;
      await this.#reader.awaitSource(queue.inFlight);
      queue.resume();
    }
  }

  /** One lane: batch after batch until the drain is over, an outage begins or the history is long. */
  async #lane(queue: QueueDrain): Promise<void> {
    for (;;) {
      if (this.#reader.unavailableSince !== null) return;
      const taken = await queue.take(this.#input.concurrency);
      if (taken === null) return;
      try {
        await this.#reader.readBatch(taken);
      } finally {
        for (const thread of taken) queue.release(thread.scope);
      }
      if (workflowInfo().continueAsNewSuggested) this.#stopping = true;
    }
  }

  /** Every lane has finished its thread: the queue (in the destination) says where to go on. */
  #continueAsNew(): Promise<never> {
    const progress = this.#progress;
    return continueAsNew<typeof threadsWorkflow>({
      ...this.#input,
      awaitTickets: !this.#signals.ticketsListed,
      runIdle: this.#signals.runIdle,
      reverified: this.#reread.reverified,
      carried: { pages: progress.pages, rows: progress.rows, requests: progress.requests },
    });
  }
}
