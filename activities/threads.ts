import { fetchMessagesPage, type Page, SupportApiError } from '../connectors/support-api/index.js';
import type { Message } from '../schemas/api/messages.js';
import type { Checkpoint, CheckpointUpdate } from '../schemas/warehouse.js';
import { nextCheckpoint, restartedCheckpoint } from './checkpoints.js';
import { fetchWithRestart } from './cursor-restart.js';
import type { ActivityDeps } from './deps.js';
import { rowsOf } from './rows.js';
import { THREAD_QUEUE_STREAM } from './tickets.js';

/**
 * One page of one queued thread (scope = ticket number), written with its queue entry's cursor in one
 * transaction; the entry completes with the thread's last page. One request per activity, so the detail
 * task queue's server-enforced rate is the fleet's detail request rate, and a failure costs one page:
 * Temporal retries that page alone (a 429 at Retry-After), never a batch.
 */
export function syncThreadPage(deps: ActivityDeps) {
  return async (input: { scope: string }) => {
    const { destination, client, logger } = deps;
    const entry = await destination.readCheckpoint(THREAD_QUEUE_STREAM, input.scope);
    // Completed already (a retry of an attempt whose commit went through): nothing to read.
    if (entry?.status !== 'running') return { done: true, rows: 0, pages: 0 };
    const ticketNumber = Number(input.scope);
    let fetched: Awaited<ReturnType<typeof fetchWithRestart<Page<Message>>>>;
    try {
      fetched = await fetchWithRestart(logger, `thread ${ticketNumber}`, entry.cursor, (cursor) =>
        fetchMessagesPage(client, { ticketNumber, cursor, limit: 100, order: 'asc' }),
      );
    } catch (err) {
      if (err instanceof SupportApiError && err.code === 'TICKET_NOT_FOUND') {
        // Deleted since it was queued: nothing to read; the sweep marks the ticket and its messages.
        logger.info({ ticketNumber, requestId: err.requestId }, 'queued ticket no longer exists');
        await destination.writeCheckpoints([done(entry, input.scope)]);
        return { done: true, rows: 0, pages: 0 };
      }
      throw err;
    }
    const { page, restarted } = fetched;
    const next = nextCheckpoint(restarted ? { ...entry, pages: 0, rows: 0 } : entry, {
      stream: THREAD_QUEUE_STREAM,
      scope: input.scope,
      cursor: page.nextCursor,
      done: !page.hasMore,
      rows: page.items.length,
    });
    await destination.writeBatch({ table: 'ticket_messages', rows: rowsOf(page), checkpoint: next });
    return { done: !page.hasMore, rows: page.items.length, pages: 1 };
  };
}

/**
 * Queued threads to read next (ticket numbers), skipping those a lane of the workflow is already on.
 */
export function listQueuedThreads(deps: ActivityDeps) {
  return async (input: { limit: number; skip: string[] }) => {
    const skip = new Set(input.skip);
    const queued = await deps.destination.listCheckpoints(THREAD_QUEUE_STREAM, {
      status: 'running',
      limit: input.limit + skip.size,
    });
    return queued
      .map((cp) => cp.scope)
      .filter((scope) => !skip.has(scope))
      .slice(0, input.limit);
  };
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

/**
 * A thread that could not be read (a permanent API error, or transient ones that outlasted its retries):
 * its queue entry is marked failed — the next run queues it again — and the failure, with the API's code
 * and request id, is recorded in `_sync_runs` (stream ticket_messages) where `status` shows it.
 */
export function markThreadFailed(deps: ActivityDeps) {
  return async (input: { scope: string; error: string; runId: string }) => {
    const { destination } = deps;
    const entry = await destination.readCheckpoint(THREAD_QUEUE_STREAM, input.scope);
    if (!entry || entry.status !== 'running') return { marked: false };
    const now = (await destination.currentTime()).toISOString();
    await destination.writeCheckpoints([{ ...entry, status: 'failed' }]);
    await destination.recordRun({
      run_id: `thread:${input.scope}`,
      parent_run_id: input.runId,
      workflow_id: `ticket_messages/${input.scope}`,
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
      error: `thread of ticket ${input.scope}: ${input.error}`,
    });
    return { marked: true };
  };
}

/**
 * Queues threads again: up to `limit` threads of live tickets last read before `verifiedBefore`, oldest
 * read first — the rolling re-read, which finds messages that did not move their ticket's `updated_at`.
 */
export function queueThreadsToReverify(deps: ActivityDeps) {
  return async (input: { limit: number; verifiedBefore: string }) => {
    const { destination } = deps;
    const stale = await destination.staleThreads(new Date(input.verifiedBefore), input.limit);
    await destination.writeCheckpoints(stale.map((scope) => restartedCheckpoint(THREAD_QUEUE_STREAM, scope)));
    return { queued: stale.length };
  };
}

/**
 * At the start of a run, threads go back to the queue whose stored state is known to be unsettled:
 *  - those that failed in an earlier run;
 *  - those with a message still in transit (`queued` or `sent`): its delivery status moves on without the
 *    ticket's `updated_at` moving, so the thread is read again until every message has settled — as open
 *    agent sessions are re-read until they close.
 */
export function requeueUnsettledThreads(deps: ActivityDeps) {
  return async () => {
    const { destination } = deps;
    const failed = await destination.listCheckpoints(THREAD_QUEUE_STREAM, { status: 'failed' });
    const inTransit = await destination.select(
      (d) =>
        `SELECT DISTINCT CAST(${d.ident('ticket_number')} AS ${d.type('string')}) AS scope FROM ${d.table('ticket_messages')} ` +
        `WHERE ${d.ident('status')} IN (${TRANSIT_STATUSES.map((x) => d.string(x)).join(', ')}) AND ${d.ident('_deleted_at')} IS NULL`,
    );
    const failedScopes = new Set(failed.map((cp) => cp.scope));
    await destination.writeCheckpoints([
      ...failed.map((cp) => ({ ...cp, status: 'running' as const })),
      ...inTransit
        .map((row) => String(row['scope']))
        .filter((scope) => !failedScopes.has(scope))
        .map((scope) => restartedCheckpoint(THREAD_QUEUE_STREAM, scope)),
    ]);
    return { requeued: failed.length, inTransit: inTransit.length };
  };
}

/** Message delivery states that still move on (spec 3: `queued`, `sent`; `delivered` and `failed` are final). */
const TRANSIT_STATUSES = ['queued', 'sent'] as const;

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
