import { REVERIFY_ROUND, type ThreadsInput } from '../../schemas/child-inputs.js';
import { bookkeeping } from '../activity-proxies.js';

/**
 * The rolling re-read's budget: threads of unchanged tickets, oldest read first, queued REVERIFY_ROUND at a
 * time, at most `reverify.max` per run (the count is carried over a continue-as-new), never a thread this
 * run already read.
 */
export class RollingReread {
  readonly #reverify: ThreadsInput['reverify'];
  #reverified: number;
  /** False once a round queued nothing: every thread was read by this run. */
  #staleLeft = true;

  constructor(input: ThreadsInput) {
    this.#reverify = input.reverify;
    this.#reverified = input.reverified;
  }

  /** Threads this run has queued for the re-read so far. */
  get reverified(): number {
    return this.#reverified;
  }

  /** Queues a round of the re-read if it may take one; whether it queued any thread. */
  async round(): Promise<boolean> {
    const reverify = this.#reverify;
    if (!reverify || !this.#staleLeft || this.#reverified >= reverify.max) return false;
    const { queued } = await bookkeeping.queueThreadsToReverify({
      limit: Math.min(REVERIFY_ROUND, reverify.max - this.#reverified),
      verifiedBefore: reverify.runStartedAt,
    });
    this.#reverified += queued;
    if (queued === 0) this.#staleLeft = false;
    return queued > 0;
  }
}
