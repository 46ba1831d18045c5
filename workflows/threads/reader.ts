import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { ThreadsInput } from '../../schemas/child-inputs.js';
import type { ChildProgress } from '../../schemas/run-summary.js';
import { STREAMS, THREADS_STREAM } from '../../schemas/streams.js';
import {
  batchClassActivities,
  bookkeeping,
  classActivities,
  impatientClassActivities,
} from '../activity-proxies.js';
import { innermostMessage, isWarehouseFailure } from '../failures.js';
import { pageGuard } from '../page-guard.js';
import { pageOptions } from '../page-loop.js';
import type { TakenThread } from './queue.js';

/** Threads failing one after the other, with no success between: the source is down, not one thread. */
const OUTAGE_AFTER_CONSECUTIVE_FAILURES = 5;

type ThreadActivities = ReturnType<typeof classActivities>;

/** What a page that failed means for its thread. */
type Verdict = 'read on patiently' | 'left queued' | 'set aside';

/**
 * Reads threads to their end, page by page, and tells one failing thread from an outage: a page is retried
 * alone (the impatient activities give up after a few minutes); a thread that keeps failing is set aside
 * (marked failed, retried by the next run); once OUTAGE_AFTER_CONSECUTIVE_FAILURES threads in a row have
 * failed, the source is taken to be down (`unavailableSince`) and the threads failing after that stay queued.
 */
export class ThreadReader {
  readonly #input: ThreadsInput;
  readonly #progress: ChildProgress;
  readonly #guard = pageGuard(THREADS_STREAM);
  /** Pages retried up to SYNC_SOURCE_PATIENCE: an outage's probe, and pages the warehouse failed. */
  readonly patient: ThreadActivities;
  /** Pages that give up after a few minutes: one thread's failure does not hold its lane. */
  readonly impatient: ThreadActivities;
  /** Runs of threads read page after page in one activity, group-committed. */
  readonly #batches: ReturnType<typeof batchClassActivities>;
  #consecutiveFailures = 0;
  #unavailableSince: string | null = null;

  constructor(input: ThreadsInput, progress: ChildProgress) {
    const { routeClass } = STREAMS[THREADS_STREAM];
    this.#input = input;
    this.#progress = progress;
    this.patient = classActivities(routeClass, { patienceMs: input.patienceMs });
    this.impatient = impatientClassActivities(routeClass);
    this.#batches = batchClassActivities(routeClass, { patienceMs: input.patienceMs });
  }

  /** When the outage began (workflow time), or null while the source answers. */
  get unavailableSince(): string | null {
    return this.#unavailableSince;
  }

  /**
   * Waits out an outage: one queued thread (not one of `skip`) retried patiently until the source answers,
   * or fails the workflow when patience ends; then failures count from zero.
   */
  async awaitSource(skip: string[]): Promise<void> {
    const [probe] = await bookkeeping.listQueuedThreadCheckpoints({ limit: 1, skip });
    this.#progress.detail = `source unavailable since ${this.#unavailableSince}; retrying`;
    if (probe) {
      try {
        await this.read(probe.scope, this.patient, probe.tag);
      } catch (err) {
        throw ApplicationFailure.nonRetryable(
          `source unavailable since ${this.#unavailableSince}: ${innermostMessage(err)}`,
          'SourceUnavailable',
        );
      }
    }
    this.#unavailableSince = null;
    this.#consecutiveFailures = 0;
  }

  /**
   * Reads a run of threads in one activity; those it hands back (anything but the plain case), and every
   * thread of a batch that failed as a whole, are read one page per activity (`read`).
   */
  async readBatch(taken: readonly TakenThread[]): Promise<void> {
    const threads = taken.map(({ scope, listedTag }) =>
      listedTag === undefined ? { scope } : { scope, listedTag },
    );
    let left: readonly string[] = taken.map((t) => t.scope);
    try {
      const report = await this.#batches.syncThreadBatch({
        threads,
        repair: this.#input.fullRefreshSince !== null,
        runId: this.#input.runId,
      });
      this.#progress.pages += report.pages;
      this.#progress.rows += report.rows;
      this.#progress.requests += report.requests;
      if (report.completed > 0) this.#consecutiveFailures = 0;
      left = report.handedBack;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
    }
    for (const scope of left) {
      if (this.#unavailableSince !== null) return; // left queued: read after the outage
      await this.read(scope, this.impatient);
    }
  }

  /** Reads one thread to its end; false if it was set aside. `listedTag`: its entry's tag as listed. */
  async read(scope: string, given: ThreadActivities, listedTag?: string): Promise<boolean> {
    let first = true;
    let activities = given;
    for (;;) {
      try {
        const options = pageOptions(this.#guard, scope, this.#input.fullRefreshSince !== null);
        // The first page names the entry as listed (newer than any cursor an earlier read of it saw here).
        const { afterCursorTag: _earlier, ...always } = options;
        const page = await activities.syncThreadPage({
          scope,
          ...(first && listedTag !== undefined ? { ...always, listedTag } : options),
          runId: this.#input.runId,
        });
        first = false;
        this.#guard.observe(scope, page);
        this.#progress.pages += page.pages;
        this.#progress.rows += page.rows;
        this.#progress.requests += page.requests;
        this.#consecutiveFailures = 0;
        if (page.done) return true;
      } catch (err) {
        if (err instanceof ApplicationFailure && err.type === 'CursorLoop') {
          // One thread whose cursor loops fails alone, like a thread the API refuses.
          await this.#setAside(scope, err.message);
          return false;
        }
        if (!(err instanceof ActivityFailure)) throw err;
        const verdict = this.#verdict(err, activities);
        if (verdict === 'read on patiently') {
          activities = this.patient;
          continue;
        }
        if (verdict === 'set aside') await this.#setAside(scope, innermostMessage(err));
        return false;
      }
    }
  }

  /** Counts a failed page towards an outage, and says what becomes of its thread. */
  #verdict(err: ActivityFailure, activities: ThreadActivities): Verdict {
    // A page that failed because the warehouse did says nothing of the thread: it is read on, patiently,
    // like every other stream's pages — never set aside, never counted towards an outage.
    if (isWarehouseFailure(err) && activities !== this.patient) return 'read on patiently';
    this.#consecutiveFailures += 1;
    if (this.#unavailableSince === null && this.#consecutiveFailures >= OUTAGE_AFTER_CONSECUTIVE_FAILURES) {
      this.#unavailableSince = new Date().toISOString();
    }
    const permanent = err.cause instanceof ApplicationFailure && err.cause.nonRetryable;
    // During an outage a thread says nothing of itself: it stays queued, read after the outage.
    return this.#unavailableSince !== null && !permanent ? 'left queued' : 'set aside';
  }

  #setAside(scope: string, error: string): Promise<{ marked: boolean }> {
    return bookkeeping.markThreadFailed({ scope, error, runId: this.#input.runId });
  }
}
