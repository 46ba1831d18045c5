import { checkpointTagOf } from '../connectors/cursor-tag.js';
import type { Bookkeeping, StateReads } from '../connectors/destination.js';
import { encodeThreadFailure, threadKeyOf } from '../schemas/state-key.js';
import { STREAMS, THREADS_STREAM } from '../schemas/streams.js';
import { readState, restartedCheckpoint } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';

/** Queue entries of threads to read next, skipping those a lane of the workflow is already on. */
async function queuedEntries(deps: ActivityDeps, input: { limit: number; skip: string[] }) {
  const skip = new Set(input.skip);
  const queued = await deps.destination.listCheckpoints({
    threadQueue: true,
    status: 'running',
    limit: input.limit + skip.size,
  });
  return queued.filter((cp) => !skip.has(cp.scope)).slice(0, input.limit);
}

/** A queued thread as the listing hands it to a lane. */
export interface ListedThread {
  readonly scope: string;
  /** The tag of its queue entry as listed (checkpointTagOf): its first page hands it back. */
  readonly tag: string;
}

/**
 * Queued threads to read next, each with the tag of its queue entry: one query for the whole listing, and
 * the thread's first page need not read its entry again — the destination that listed it holds it
 * (Destination.readCheckpoint's `lastSeenTag`). Cursors stay out of history: only tags travel.
 */
export function listQueuedThreadCheckpoints(deps: ActivityDeps) {
  return async (input: { limit: number; skip: string[] }): Promise<ListedThread[]> =>
    (await queuedEntries(deps, input)).map((cp) => ({ scope: cp.scope, tag: checkpointTagOf(cp) }));
}

/**
 * A thread that could not be read (a permanent API error, or transient ones that outlasted its retries):
 * its queue entry is marked failed — the next run queues it again — and the failure, with the API's code
 * and request id, is recorded in `_sync_runs` (stream: the threads stream) where `status` shows it.
 */
export function markThreadFailed(deps: ActivityDeps) {
  return async (input: { scope: string; error: string; runId: string }) => {
    const { destination } = deps;
    const key = threadKeyOf(input.scope);
    const entry = await readState(destination, key);
    if (entry?.status !== 'running') return { marked: false };
    const now = (await destination.currentTime()).toISOString();
    await destination.writeTables([], [{ ...entry, status: 'failed' }]);
    await destination.bookkeeping.recordRun({
      ...encodeThreadFailure(key),
      parent_run_id: input.runId,
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
    const stale = await destination.bookkeeping.staleThreads(new Date(input.verifiedBefore), input.limit);
    await destination.writeTables(
      [],
      stale.map((scope) => restartedCheckpoint(threadKeyOf(scope))),
    );
    return { queued: stale.length };
  };
}

/**
 * At the start of a run, threads go back to the queue whose stored state is known to be unsettled:
 *  - those that failed in an earlier run, and those with a message set aside in `_rejected`;
 *  - those with a message still in transit (`queued` or `sent`): its delivery status moves on without the
 *    ticket's `updated_at` moving, so the thread is read again until every message has settled — as open
 *    agent sessions are re-read until they close.
 */
export function requeueUnsettledThreads(deps: ActivityDeps) {
  return async () => {
    const { failed, inTransit, withRejected, again } = await unsettledThreads(deps.destination);
    await deps.destination.writeTables(
      [],
      [
        ...failed.map((cp) => ({ ...cp, status: 'running' as const })),
        ...again.map((scope) => restartedCheckpoint(threadKeyOf(scope))),
      ],
    );
    return { requeued: failed.length, inTransit, withRejected };
  };
}

/**
 * The unsettled threads (see requeueUnsettledThreads), read only: the failed queue entries, and the other
 * threads (`again`) to queue from scratch. The `plan` command counts them too.
 */
export async function unsettledThreads(
  reads: Pick<StateReads, 'listCheckpoints' | 'liveRows'> & {
    readonly bookkeeping: Pick<Bookkeeping, 'openRejections'>;
  },
) {
  const failed = await reads.listCheckpoints({ threadQueue: true, status: 'failed' });
  // The threads of live messages still in transit: from the live messages' numbers and states (liveRows:
  // a table read on BigQuery, where a query bills 10 MB at least).
  const inTransit = [
    ...new Set(
      (
        await reads.liveRows(STREAMS[THREADS_STREAM].table, ['ticket_number'], {
          kind: 'in',
          column: 'status',
          values: TRANSIT_STATUSES,
        })
      )
        .filter((m) => m['ticket_number'] != null)
        .map((m) => String(m['ticket_number'])),
    ),
  ];
  // Threads with a message set aside (`_rejected`): read again until it can be stored.
  const withRejected = [
    ...new Set(
      (await reads.bookkeeping.openRejections())
        .filter((r) => r.table_name === STREAMS[THREADS_STREAM].table)
        .map((r) => r.scope),
    ),
  ];
  const failedScopes = new Set(failed.map((cp) => cp.scope));
  const again = [...new Set([...inTransit, ...withRejected])].filter((scope) => !failedScopes.has(scope));
  return { failed, inTransit: inTransit.length, withRejected: withRejected.length, again };
}

/** Message delivery states that still move on (spec 3: `queued`, `sent`; `delivered` and `failed` are final). */
export const TRANSIT_STATUSES = ['queued', 'sent'] as const;

/**
 * After a full refresh drained the thread queue (every thread re-read since `fullRefreshSince`): messages
 * not served any more (their ticket was deleted, or the message was) get `_deleted_at`.
 */
export function finishThreads(deps: ActivityDeps) {
  return async (input: { fullRefreshSince: string }) => {
    const pending = await deps.destination.listCheckpoints({
      threadQueue: true,
      status: 'running',
      limit: 1,
    });
    if (pending.length > 0) {
      throw Object.assign(new Error('the thread queue is not drained; refusing to mark messages deleted'), {
        nonRetryable: true,
      });
    }
    const now = deps.now?.() ?? new Date();
    // Only messages of threads read to their end are candidates: a thread that failed this run keeps its
    // messages (its queue entry is not complete), it was not read, so nothing can be said about them.
    const deleted = await deps.destination.markDeleted(
      {
        table: STREAMS[THREADS_STREAM].table,
        notSeenSince: new Date(input.fullRefreshSince),
        unlessUnread: { column: 'ticket_number' },
      },
      now,
    );
    return { deleted };
  };
}
