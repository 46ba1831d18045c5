import { CancelledFailure, Context } from '@temporalio/activity';
import pLimit, { type LimitFunction } from 'p-limit';
import { lastSeen, runScope } from '../connectors/destination.js';
import { currentCancellation, type Page, SupportClientError } from '../connectors/support-api/index.js';
import { newestStampMs } from '../schemas/freshness.js';
import { encodeStateKey, THREAD_QUEUE_STREAM, threadKeyOf } from '../schemas/state-key.js';
import { STREAMS } from '../schemas/streams.js';
import type {
  Checkpoint,
  CheckpointUpdate,
  RejectedItem,
  SchemaChangeSighting,
} from '../schemas/warehouse.js';
import type { CheckpointCounts } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';
import { PAGE_FETCHERS } from './fetchers.js';
import { earlierProgress, recordProgress } from './heartbeat.js';
import { fetchPageStep, type PageStep, setAsideCount } from './page-step.js';
import { recordedDrift } from './recorded-drift.js';
import { endlessScopeBound, type PageTarget, pageWrite } from './sync-page.js';

/**
 * Group commit: the pages a batch holds before it writes them, with their checkpoints, in one destination
 * call (one transaction; PostgreSQL: one COPY per table). A crash re-fetches at most the pages of the commit
 * being written and of the one being filled: 2 × COMMIT_PAGES.
 */
export const COMMIT_PAGES = 20;
/** …or sooner, at this many rows, */
export const COMMIT_ROWS = 5_000;
/** …or once the oldest page held waited this long (a slow source still commits every second). */
export const COMMIT_MS = 1_000;
/**
 * Thread-batch commits of one process in flight at once. Their merges into `ticket_messages` take the
 * table's lock one after the other anyway (connectors/postgres/write.ts), so more would only hold pool
 * connections waiting for it — while the tickets page that queues the next threads waits for a connection.
 * A lane whose commit waits reads on into its next commit (up to its size), so waiting groups pages more.
 */
export const COMMITS_AT_ONCE = 2;
const commitSlots = new WeakMap<object, LimitFunction>();

/** Pages of one thread a batch reads; a longer thread goes on with one page per activity. */
export const MAX_THREAD_PAGES_PER_BATCH = 100;

/** A queued thread as a lane hands it to the batch. */
export interface BatchThread {
  readonly scope: string;
  /** Its queue entry's tag as listed (listQueuedThreadCheckpoints): the first read may come from memory. */
  readonly listedTag?: string;
}

export interface ThreadBatchInput {
  readonly threads: readonly BatchThread[];
  readonly repair?: boolean;
  readonly runId?: string;
}

/** What a batch reports: counts, and the threads it leaves to the page-per-activity path. */
export interface ThreadBatchReport {
  /** Pages read and committed, rows staged, items set aside. */
  readonly pages: number;
  readonly rows: number;
  readonly rejected: number;
  /** Threads read to their end and committed. */
  readonly completed: number;
  /**
   * Threads not read to their end here — a failed request, a cursor the API rejected or that came round, a
   * bound reached, a long thread, a rate limit (a failure of the source hands back every thread not read
   * yet: sourceWide): everything but the plain case. Their pages read so far are
   * committed; the workflow reads them on one page per activity (syncThreadPage), which owns every one of
   * those cases (restart, set-aside, outage, gone ticket, the cursor guard).
   */
  readonly handedBack: readonly string[];
}

/** The heartbeat's progress: where a retried attempt resumes, and what the committed pages counted. */
interface BatchProgress {
  /** Index of the first thread not committed to its end (threads before it are done or handed back). */
  readonly resumeAt: number;
  readonly pages: number;
  readonly rows: number;
  readonly rejected: number;
  readonly completed: number;
  readonly handedBack: readonly string[];
}

type AnyPage = Page<unknown, unknown>;

/** The pages held for the next commit. */
interface Held {
  rows: ReturnType<typeof pageWrite>['rows'];
  checkpoints: CheckpointUpdate[];
  rejected: RejectedItem[];
  schemaChanges: SchemaChangeSighting[];
  pages: number;
  rejectedCount: number;
  newestMs: number | null;
  completed: number;
  since: number;
}

const emptyHeld = (): Held => ({
  rows: [],
  checkpoints: [],
  rejected: [],
  schemaChanges: [],
  pages: 0,
  rejectedCount: 0,
  newestMs: null,
  completed: 0,
  since: Date.now(),
});

/**
 * A run of queued threads in one activity: thread after thread, page after page, each page's request taking
 * its rate slot like any other (the client's governor and the fleet budget), the pages and their queue
 * entries' checkpoints group-committed (COMMIT_PAGES, COMMIT_ROWS, COMMIT_MS), the next request in flight
 * while the previous commit is written, the progress heartbeated after every commit — a retried attempt
 * resumes from it and the threads' committed checkpoints, so a crash re-fetches at most the pages not
 * committed. Cancellation (it arrives with a heartbeat) aborts the request in flight and ends the batch.
 * Each page is the page path's (activities/sync-page.ts): the same fetch and guards (fetchPageStep), the same
 * write (pageWrite), the same bounds (endlessScopeBound); whatever is not the plain case is handed back.
 */
export function syncThreadBatch(deps: ActivityDeps) {
  return async (input: ThreadBatchInput): Promise<ThreadBatchReport> => {
    const resumed = earlierProgress<BatchProgress>();
    let committed: BatchProgress = resumed ?? {
      resumeAt: 0,
      pages: 0,
      rows: 0,
      rejected: 0,
      completed: 0,
      handedBack: [],
    };
    const handedBack = new Set(committed.handedBack);
    const table = STREAMS.ticket_messages.table;
    const drift = recordedDrift(deps);
    let held = emptyHeld();
    let writing: Promise<void> | null = null;

    /** Writes what is held (after the commit before it), then heartbeats the progress it makes durable. */
    const commit = async (resumeAt: number): Promise<void> => {
      const batch = held;
      held = emptyHeld();
      const previous = writing;
      const snapshot = { resumeAt, handedBack: [...handedBack] };
      const write = (async () => {
        await previous;
        if (batch.checkpoints.length === 0) return;
        let slots = commitSlots.get(deps.destination);
        if (!slots) {
          slots = pLimit(COMMITS_AT_ONCE);
          commitSlots.set(deps.destination, slots);
        }
        const staged = await slots(() =>
          deps.destination.writeTables(
            [
              {
                table,
                rows: batch.rows as never,
                checkpoint: batch.checkpoints,
                rejected: batch.rejected,
                schemaChanges: batch.schemaChanges,
                repair: input.repair === true,
              },
            ],
            undefined,
            { stage: true, ...runScope(deps.destination, input.runId ?? null) },
          ),
        );
        drift.remember(batch.schemaChanges);
        deps.observer?.rowsWritten({
          stream: 'ticket_messages',
          table,
          rows: staged.rows,
          rejected: batch.rejectedCount,
          newestMs: batch.newestMs,
          setAsideNewestMs: null,
        });
        committed = {
          ...snapshot,
          pages: committed.pages + batch.pages,
          rows: committed.rows + staged.rows,
          rejected: committed.rejected + batch.rejectedCount,
          completed: committed.completed + batch.completed,
        };
        recordProgress(committed);
      })();
      // Awaited by the next commit or at the end; handled now, so a failed write waiting for them is no
      // unhandled rejection.
      write.catch(() => undefined);
      writing = write;
      // The next request goes while this commit is written; the one after it waits for it (one in flight).
      if (previous) await previous;
    };
    const due = () =>
      held.pages >= COMMIT_PAGES ||
      held.rows.length >= COMMIT_ROWS ||
      (held.pages > 0 && Date.now() - held.since >= COMMIT_MS);

    const entries = queueEntries(deps, input.threads.slice(committed.resumeAt));
    let stop = false;
    for (let i = committed.resumeAt; i < input.threads.length; i++) {
      const thread = input.threads[i]!;
      if (stop || handedBack.has(thread.scope)) {
        handedBack.add(thread.scope);
        continue;
      }
      const key = threadKeyOf(thread.scope);
      const target: PageTarget<AnyPage> = {
        stream: 'ticket_messages',
        table,
        scope: thread.scope,
        checkpointStream: encodeStateKey(key).stream,
        allowRestart: false,
        repair: input.repair === true,
        runId: input.runId ?? null,
        fetch: (cursor) =>
          PAGE_FETCHERS.ticket_messages(deps.client, { ticketNumber: key.ticketNumber }, cursor),
      };
      const entry = await entries.read(thread);
      // Completed already (an earlier attempt committed it), failed or gone from the queue: nothing to read.
      if (entry?.status !== 'running') continue;
      let previous: CheckpointCounts | null = entry;
      let cursor = entry.cursor;
      const tags = new Set<string>();
      for (let pages = 0; ; pages++) {
        if (isCancelled()) {
          // What was read is committed first: the cancelled batch loses nothing it read.
          await commit(i);
          await writing;
          throw new CancelledFailure('thread batch cancelled');
        }
        if (pages >= MAX_THREAD_PAGES_PER_BATCH || endlessScopeBound(deps, previous, true) !== null) {
          handedBack.add(thread.scope);
          break;
        }
        let step: PageStep<AnyPage>;
        try {
          step = await fetchPageStep(deps, { ...target, cursor, fetch: target.fetch });
        } catch (err) {
          if (currentCancellation()?.aborted || isCancelled()) {
            await commit(i);
            await writing;
            throw err;
          }
          handedBack.add(thread.scope);
          if (sourceWide(err)) stop = true;
          break;
        }
        const { page } = step;
        if (step.nextCursorTag !== null && tags.has(step.nextCursorTag)) {
          handedBack.add(thread.scope);
          break;
        }
        if (step.nextCursorTag !== null) tags.add(step.nextCursorTag);
        deps.observer?.pageRead(
          'ticket_messages',
          newestStampMs('ticket_messages', [...page.items, ...page.rejected.map((r) => r.raw)]),
        );
        const write = pageWrite(deps, target, step, previous);
        held.rows.push(...write.rows);
        held.checkpoints.push(write.checkpoint);
        held.rejected.push(...write.rejected);
        held.schemaChanges.push(...write.schemaChanges);
        held.pages += 1;
        held.rejectedCount += setAsideCount(page);
        const newest = newestStampMs('ticket_messages', page.items);
        if (newest !== null && newest !== undefined)
          held.newestMs = Math.max(held.newestMs ?? newest, newest);
        previous = write.checkpoint;
        cursor = page.nextCursor;
        if (!page.hasMore) {
          held.completed += 1;
          // Threads before i + 1 are done: a retry resumes after them.
          if (due()) await commit(i + 1);
          break;
        }
        if (due()) await commit(i);
      }
    }
    await commit(input.threads.length);
    await writing;
    return {
      pages: committed.pages,
      rows: committed.rows,
      rejected: committed.rejected,
      completed: committed.completed,
      handedBack: [...handedBack],
    };
  };
}

/**
 * The batch's queue entries as each thread's read begins. A destination that remembers the entries it
 * listed answers each from memory (its listed tag); any other is asked once for all of them (one listing
 * of their key range, not a query per thread on each lane's path), the listing made when the first thread
 * needs it. An entry only its lane writes while it holds the thread, so the batch's own listing stays true.
 */
function queueEntries(deps: ActivityDeps, threads: readonly BatchThread[]) {
  if (deps.destination.capabilities.remembersCheckpointTags)
    return {
      read: (thread: BatchThread) =>
        deps.destination.readCheckpoint(
          THREAD_QUEUE_STREAM,
          thread.scope,
          lastSeen(deps.destination, thread.listedTag),
        ),
    };
  let listed: Promise<Map<string, Checkpoint>> | undefined;
  return {
    read: async (thread: BatchThread): Promise<Checkpoint | null> => {
      listed ??= deps.destination
        .listCheckpoints({ threadQueue: true, scopes: threads.map((t) => t.scope) })
        .then((list) => new Map(list.map((cp) => [cp.scope, cp])));
      return (await listed).get(thread.scope) ?? null;
    },
  };
}

/**
 * A failure that says something of the source rather than of this thread — a rate limit, a 5xx, a
 * connection that failed (what the client retries) — ends the batch: the threads left go to the page path,
 * which waits at Retry-After or tells an outage (every thread failing) from one bad thread, instead of this
 * batch spending a failing request on each. A permanent answer about the thread (404, a page that breaks
 * the spec, a cursor refused or repeating) hands back that thread alone.
 */
function sourceWide(err: unknown): boolean {
  if (err instanceof SupportClientError) return err.retryable;
  return (err as { nonRetryable?: unknown } | null)?.nonRetryable !== true;
}

function isCancelled(): boolean {
  try {
    return Context.current().cancellationSignal.aborted;
  } catch {
    return false;
  }
}
