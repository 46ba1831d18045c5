import { type ChildWorkflowHandle, Trigger } from '@temporalio/workflow';
import { runIdleSignal, type threadsWorkflow, ticketsListedSignal } from '../threads.js';
import type { Lane } from './context.js';

/**
 * How the lanes of a run wait for each other — the one place they do (the lanes themselves only call it):
 *  - the threads child starts first and the tickets child after it (`threadsStarted`, `threadsReady`), so
 *    every thread a tickets page queues has a reader;
 *  - when the listing ends, however it ends (`listingEnded`), the exports waiting for the history start
 *    (`listing`: whether the sweep completed) plan, and the threads child reads what is left and ends;
 *  - when every lane but tickets/threads has settled (`others`), the threads child's rolling re-read takes
 *    no further round (`runIdle`: a signal, or its input when it starts after that).
 */
export class LaneCoordinator {
  /** Settles when the tickets listing has ended, with whether its sweep completed. */
  readonly listing = new Trigger<boolean>();
  /** Settles when the threads child has started (or its lane failed before): the tickets child may start. */
  readonly threadsReady = new Trigger<void>();
  #threads: ChildWorkflowHandle<typeof threadsWorkflow> | undefined;
  #othersSettled = false;

  /** Whether every lane but tickets/threads has settled: the threads child's `runIdle` when it starts. */
  get othersSettled(): boolean {
    return this.#othersSettled;
  }

  /**
   * The lanes other than tickets/threads (in groups, returned in the same groups), each counted as it
   * settles: the last one tells the threads child (none: settled from the start).
   */
  others<G extends readonly (readonly Lane[])[]>(...groups: G): { [K in keyof G]: Lane[] } {
    let pending = groups.reduce((n, lanes) => n + lanes.length, 0);
    if (pending === 0) this.#othersSettled = true;
    const counted =
      (lane: Lane): Lane =>
      async () => {
        try {
          await lane();
        } finally {
          pending -= 1;
          if (pending === 0) {
            this.#othersSettled = true;
            await this.#threads?.signal(runIdleSignal).catch(() => undefined);
          }
        }
      };
    return groups.map((lanes) => lanes.map(counted)) as { [K in keyof G]: Lane[] };
  }

  /** The threads child has started: it hears from now on, at once if the other lanes have settled. */
  async threadsStarted(handle: ChildWorkflowHandle<typeof threadsWorkflow>): Promise<void> {
    this.#threads = handle;
    if (this.#othersSettled) await handle.signal(runIdleSignal);
    this.threadsReady.resolve();
  }

  /** The listing has ended: the exports may plan, and the threads child reads what it queued, then ends. */
  async listingEnded(sweepComplete: boolean): Promise<void> {
    this.listing.resolve(sweepComplete);
    await this.#threads?.signal(ticketsListedSignal).catch(() => undefined);
  }
}
