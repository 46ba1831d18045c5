import pLimit from 'p-limit';
import { fetchMessagesPage, type Page, SupportApiError } from '../connectors/support-api/index.js';
import type { Message } from '../schemas/api/messages.js';
import type { CheckpointUpdate } from '../schemas/warehouse.js';
import { nextCheckpoint } from './checkpoints.js';
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

/**
 * Syncs the threads of up to `batchSize` queued tickets, `concurrency` at a time (the rate governor paces
 * the detail class). Every thread page is written with its queue entry's cursor in one transaction (pages
 * fetched at the same time share it: see groupCommitter), and the entry is completed with the last page:
 * a crash re-fetches only the pages that were in flight.
 */
export function syncThreadBatch(deps: ActivityDeps) {
  return async (input: { batchSize: number; concurrency: number }) =>
    withHeartbeat(async () => {
      const { destination, client, logger } = deps;
      const queued = await destination.listCheckpoints(THREAD_QUEUE_STREAM, {
        status: 'running',
        limit: input.batchSize,
      });
      const limit = pLimit(input.concurrency);
      const commit = groupCommitter(destination);
      let pages = 0;
      let rows = 0;
      // After the first failure no lane starts another thread or page, and the activity fails only once
      // every lane has stopped: work left running after the activity failed would race its retry, which
      // lists the same queued entries (duplicate fetches, spent rate budget, writes after the failure).
      let failed = false;
      const lanes = await Promise.allSettled(
        queued.map((entry) =>
          limit(async () => {
            const ticketNumber = Number(entry.scope);
            let checkpoint = entry;
            for (;;) {
              if (failed) return;
              let fetched: Awaited<ReturnType<typeof fetchWithRestart<Page<Message>>>>;
              try {
                fetched = await fetchWithRestart(
                  logger,
                  `thread ${ticketNumber}`,
                  checkpoint.cursor,
                  (cursor) => fetchMessagesPage(client, { ticketNumber, cursor, limit: 100, order: 'asc' }),
                );
              } catch (err) {
                if (err instanceof SupportApiError && err.code === 'TICKET_NOT_FOUND') {
                  // Deleted since it was queued: nothing to fetch; the next full refresh marks the ticket.
                  logger.info({ ticketNumber, requestId: err.requestId }, 'queued ticket no longer exists');
                  await commit(
                    [],
                    nextCheckpoint(checkpoint, {
                      stream: THREAD_QUEUE_STREAM,
                      scope: entry.scope,
                      cursor: null,
                      done: true,
                      rows: 0,
                    }),
                  );
                  return;
                }
                throw err;
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
              if (!page.hasMore) return;
              checkpoint = { ...checkpoint, ...next, updated_at: checkpoint.updated_at };
            }
          }).catch((err: unknown) => {
            failed = true;
            throw err;
          }),
        ),
      );
      const rejected = lanes.find((lane) => lane.status === 'rejected');
      if (rejected) throw rejected.reason;
      return { threads: queued.length, pages, rows, remaining: queued.length < input.batchSize ? 0 : -1 };
    });
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
