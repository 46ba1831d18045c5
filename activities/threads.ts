import pLimit from 'p-limit';
import {
  fetchMessagesPage,
  type Page,
  RateLimitedError,
  SchemaViolationError,
  SupportApiError,
  SupportClientError,
} from '../connectors/support-api/index.js';
import type { Message } from '../schemas/api/messages.js';
import type { Checkpoint, CheckpointUpdate } from '../schemas/warehouse.js';
import { nextCheckpoint, restartedCheckpoint } from './checkpoints.js';
import { fetchWithRestart } from './cursor-restart.js';
import type { ActivityDeps } from './deps.js';
import { withHeartbeat } from './heartbeat.js';
import { rowsOf } from './rows.js';
import { THREAD_QUEUE_STREAM } from './tickets.js';

type MessageRow = ReturnType<typeof rowsOf<Message, unknown>>[number];

/**
 * Group commit for thread pages: every page handed to `write` is committed with its queue entry's
 * checkpoint, and the promise resolves once that transaction has committed. Pages arriving while a
 * transaction runs are committed together in the next one, so `concurrency` threads cost about one
 * transaction per round instead of one each (a transaction, with its staging table and merge, costs more
 * than a thread page's fetch). A lane waits for its page's commit before it fetches the next one, so no
 * more pages are uncommitted at a time than before: a crash still re-fetches only the pages in flight.
 */
function groupCommitter(destination: ActivityDeps['destination']) {
  type Pending = {
    rows: MessageRow[];
    checkpoint: CheckpointUpdate;
    resolve: () => void;
    reject: (err: unknown) => void;
  };
  let queue: Pending[] = [];
  let running = false;
  async function drain(): Promise<void> {
    running = true;
    while (queue.length > 0) {
      const group = queue;
      queue = [];
      try {
        await destination.writeBatch({
          table: 'ticket_messages',
          rows: group.flatMap((p) => p.rows),
          checkpoint: group.map((p) => p.checkpoint),
        });
        for (const p of group) p.resolve();
      } catch (err) {
        for (const p of group) p.reject(err);
      }
    }
    running = false;
  }
  return (rows: MessageRow[], checkpoint: CheckpointUpdate): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      queue.push({ rows, checkpoint, resolve, reject });
      if (!running) void drain();
    });
}

/** A thread that could not be read in this batch: why, for the ledger and `status`. */
interface ThreadProblem {
  scope: string;
  error: string;
}

/**
 * Syncs the threads of up to `batchSize` queued tickets, `concurrency` at a time (the rate governor paces
 * the detail class). Every thread page is written with its queue entry's cursor in one transaction (pages
 * fetched at the same time share it: see groupCommitter), and the entry is completed with the last page:
 * a crash re-fetches only the pages that were in flight.
 *
 * One thread's failure never costs the batch (issue: a transient error costs one request, never a batch):
 *  - a transient error that the client's own retries did not overcome leaves that entry queued, at its
 *    cursor (`deferred`); the workflow retries it in a later batch and gives up on it after a few tries;
 *  - a permanent error (4xx, a schema violation) marks that entry `failed` (`failed`, with code and
 *    request id); a later run retries it;
 *  - a 429 stops every lane from starting anything new; the batch returns what it did and when the
 *    budget is back (`retryAfterMs`).
 * Only a batch in which nothing at all succeeded throws (so a real outage backs off in Temporal).
 */
export function syncThreadBatch(deps: ActivityDeps) {
  return async (input: {
    batchSize: number;
    concurrency: number;
    /** Entries to mark failed instead of reading (deferred too often by this run). */
    giveUp?: ThreadProblem[];
  }) =>
    withHeartbeat(async () => {
      const { destination, client, logger } = deps;
      if (input.giveUp && input.giveUp.length > 0) await markFailed(destination, input.giveUp);
      const queued = await destination.listCheckpoints(THREAD_QUEUE_STREAM, {
        status: 'running',
        limit: input.batchSize,
      });
      const limit = pLimit(input.concurrency);
      const commit = groupCommitter(destination);
      let pages = 0;
      let rows = 0;
      let completed = 0;
      let retryAfterMs = 0;
      const deferred: ThreadProblem[] = [];
      const failed: ThreadProblem[] = [];
      let lastError: unknown = null;
      await Promise.all(
        queued.map((entry) =>
          limit(async () => {
            const ticketNumber = Number(entry.scope);
            let checkpoint = entry;
            for (;;) {
              if (retryAfterMs > 0) return; // the budget is spent: leave the entry queued
              let fetched: Awaited<ReturnType<typeof fetchWithRestart<Page<Message>>>>;
              try {
                fetched = await fetchWithRestart(
                  logger,
                  `thread ${ticketNumber}`,
                  checkpoint.cursor,
                  (cursor) => fetchMessagesPage(client, { ticketNumber, cursor, limit: 100, order: 'asc' }),
                );
              } catch (err) {
                lastError = err;
                if (err instanceof SupportApiError && err.code === 'TICKET_NOT_FOUND') {
                  // Deleted since it was queued: nothing to read; the sweep marks the ticket and its messages.
                  logger.info({ ticketNumber, requestId: err.requestId }, 'queued ticket no longer exists');
                  await commit([], done(checkpoint, entry.scope));
                  completed += 1;
                  return;
                }
                if (err instanceof RateLimitedError) {
                  retryAfterMs = Math.max(retryAfterMs, err.retryAfterMs, 1);
                  return;
                }
                const problem = { scope: entry.scope, error: describe(err) };
                if (isPermanent(err)) failed.push(problem);
                else deferred.push(problem);
                logger.warn({ ticketNumber, error: problem.error }, 'thread not read in this batch');
                return;
              }
              const { page, restarted } = fetched;
              const next = nextCheckpoint(restarted ? { ...checkpoint, pages: 0, rows: 0 } : checkpoint, {
                stream: THREAD_QUEUE_STREAM,
                scope: entry.scope,
                cursor: page.nextCursor,
                done: !page.hasMore,
                rows: page.items.length,
              });
              await commit(rowsOf(page), next);
              pages += 1;
              rows += page.items.length;
              if (!page.hasMore) {
                completed += 1;
                return;
              }
              checkpoint = { ...checkpoint, ...next, updated_at: checkpoint.updated_at };
            }
          }),
        ),
      );
      if (failed.length > 0) await markFailed(destination, failed);
      // Nothing moved at all: let Temporal back off (a real outage), unless only the rate limit stopped it.
      if (queued.length > 0 && pages === 0 && completed === 0 && failed.length === 0 && retryAfterMs === 0) {
        throw lastError ?? new Error('no thread of the batch could be read');
      }
      return {
        threads: queued.length,
        completed,
        pages,
        rows,
        deferred,
        failed,
        retryAfterMs,
        remaining: queued.length < input.batchSize ? 0 : -1,
      };
    });
}

/** The queue entry of a thread read to its end (or gone with its ticket). */
function done(checkpoint: Checkpoint, scope: string): CheckpointUpdate {
  return nextCheckpoint(checkpoint, {
    stream: THREAD_QUEUE_STREAM,
    scope,
    cursor: null,
    done: true,
    rows: 0,
  });
}

function isPermanent(err: unknown): boolean {
  if (err instanceof SupportApiError) return !err.retryable;
  return err instanceof SchemaViolationError || (err instanceof SupportClientError && !err.retryable);
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Marks thread-queue entries failed (a later run queues them again) and records each failure, with the
 * API's code and request id, in `_sync_runs` (stream ticket_messages) where `status` shows it.
 */
async function markFailed(destination: ActivityDeps['destination'], problems: readonly ThreadProblem[]) {
  const now = (await destination.currentTime()).toISOString();
  for (const p of problems) {
    const entry = await destination.readCheckpoint(THREAD_QUEUE_STREAM, p.scope);
    if (!entry) continue;
    await destination.writeCheckpoints([{ ...entry, status: 'failed' }]);
    await destination.recordRun({
      run_id: `thread:${p.scope}`,
      parent_run_id: null,
      workflow_id: `ticket_messages/${p.scope}`,
      stream: 'ticket_messages',
      window_start: null,
      window_end: null,
      mode: 'incremental',
      status: 'failed',
      started_at: now,
      finished_at: now,
      pages: entry.pages,
      rows_written: entry.rows,
      requests: 0,
      error: `thread of ticket ${p.scope}: ${p.error}`,
    });
  }
}

/**
 * Queues threads again: those failed earlier (a later run retries them), and up to `limit` threads of live
 * tickets last read before `verifiedBefore`, oldest read first — the rolling re-read, which finds messages
 * that did not move their ticket's `updated_at`. Returns how many of the latter were queued.
 */
export function queueThreadsToReverify(deps: ActivityDeps) {
  return async (input: { limit: number; verifiedBefore: string }) => {
    const { destination } = deps;
    const stale = await destination.staleThreads(new Date(input.verifiedBefore), input.limit);
    await destination.writeCheckpoints(stale.map((scope) => restartedCheckpoint(THREAD_QUEUE_STREAM, scope)));
    return { queued: stale.length };
  };
}

/** Failed thread entries go back to the queue (at the start of a run). */
export function requeueFailedThreads(deps: ActivityDeps) {
  return async () => {
    const failed = await deps.destination.listCheckpoints(THREAD_QUEUE_STREAM, { status: 'failed' });
    await deps.destination.writeCheckpoints(failed.map((cp) => ({ ...cp, status: 'running' as const })));
    return { requeued: failed.length };
  };
}

/**
 * After a full refresh drained the thread queue (every thread re-read since `fullRefreshSince`): messages
 * not served any more (their ticket was deleted, or the message was) get `_deleted_at`.
 */
export function finishThreads(deps: ActivityDeps) {
  return async (input: { fullRefreshSince: string }) => {
    const pending = await deps.destination.listCheckpoints(THREAD_QUEUE_STREAM, {
      status: 'running',
      limit: 1,
    });
    if (pending.length > 0) {
      throw Object.assign(new Error('the thread queue is not drained; refusing to mark messages deleted'), {
        nonRetryable: true,
      });
    }
    const now = deps.now?.() ?? new Date();
    const deleted = await deps.destination.markDeletedNotSeenSince(
      'ticket_messages',
      new Date(input.fullRefreshSince),
      now,
    );
    return { deleted };
  };
}
