import { fetchTicketsPage } from '../connectors/support-api/index.js';
import type { CheckpointUpdate } from '../schemas/warehouse.js';
import { laterInstant, nextCheckpoint, restartedCheckpoint } from './checkpoints.js';
import { fetchWithRestart } from './cursor-restart.js';
import type { ActivityDeps } from './deps.js';
import { rowsOf } from './rows.js';

/** `_sync_state` stream of the thread queue; scope = ticket number. */
export const THREAD_QUEUE_STREAM = 'ticket_messages';
/** `_sync_state` stream/scope holding the tickets high-water mark (newest `created_at` synced). */
export const TICKETS_HWM = { stream: 'tickets', scope: 'hwm' } as const;

const sameInstant = (a: string | null | undefined, b: string) => a != null && Date.parse(a) === Date.parse(b);

/**
 * One page of tickets (newest first, with custom fields), written with the crawl's checkpoint and with a
 * queue entry for every thread to fetch, all in one transaction:
 *  - new tickets and tickets whose `updated_at` differs from the stored row;
 *  - tickets created inside the thread look-back, even if `updated_at` did not move, because the spec does
 *    not promise that a new message moves it.
 *  - on a full refresh, every ticket.
 * Done when the API has no more pages, or (incremental) the page reaches below `since`.
 */
export function syncTicketsPage(deps: ActivityDeps) {
  return async (input: {
    scope: string;
    since: string | null;
    pageSize: number;
    threadLookbackMs: number;
    runStartedAt: string;
  }) => {
    const { destination, client, logger } = deps;
    const previous = await destination.readCheckpoint('tickets', input.scope);
    if (previous?.status === 'complete') return { rows: 0, threadsQueued: 0, done: true };
    const { page, restarted } = await fetchWithRestart(
      logger,
      `tickets ${input.scope}`,
      previous?.cursor ?? null,
      (cursor) => fetchTicketsPage(client, { cursor, limit: input.pageSize, includeTicketFields: true }),
    );
    const base = restarted ? null : previous;
    const stored = await destination.storedVersions(
      'tickets',
      page.items.map((t) => t.id),
    );
    const threadCutoff = Date.parse(input.runStartedAt) - input.threadLookbackMs;
    // A full refresh (no lower bound) re-reads every thread.
    const toQueue = page.items.filter(
      (t) =>
        input.since === null ||
        !sameInstant(stored.get(t.id), t.updated_at) ||
        Date.parse(t.created_at) >= threadCutoff,
    );
    const sinceMs = input.since === null ? Number.NEGATIVE_INFINITY : Date.parse(input.since);
    const oldest = page.items.at(-1);
    const done = !page.hasMore || (oldest !== undefined && Date.parse(oldest.created_at) < sinceMs);
    // The newest ticket of the crawl is on its first page; it becomes the high-water mark when complete.
    const newest = base?.high_water_mark ?? page.items[0]?.created_at ?? null;
    const checkpoints: CheckpointUpdate[] = [
      nextCheckpoint(base, {
        stream: 'tickets',
        scope: input.scope,
        cursor: page.nextCursor,
        done,
        rows: page.items.length,
        highWaterMark: laterInstant(newest, page.items[0]?.created_at),
      }),
      ...toQueue.map((t) => restartedCheckpoint(THREAD_QUEUE_STREAM, String(t.ticket_number), t.updated_at)),
    ];
    await destination.writeBatch({ table: 'tickets', rows: rowsOf(page), checkpoint: checkpoints });
    return { rows: page.items.length, threadsQueued: toQueue.length, done };
  };
}

/**
 * After a complete crawl: move the tickets high-water mark, and on a full refresh mark tickets that the
 * crawl did not see as deleted (never hard-deleted: `_deleted_at` is set, history stays).
 */
export function finishTickets(deps: ActivityDeps) {
  return async (input: { scope: string; deletionSince: string | null }) => {
    const { destination } = deps;
    const crawl = await destination.readCheckpoint('tickets', input.scope);
    if (crawl?.status !== 'complete') {
      throw Object.assign(new Error(`tickets crawl ${input.scope} is not complete; refusing to finish it`), {
        nonRetryable: true,
      });
    }
    const current = await destination.readCheckpoint(TICKETS_HWM.stream, TICKETS_HWM.scope);
    const hwm = laterInstant(current?.high_water_mark, crawl.high_water_mark);
    const update: CheckpointUpdate = {
      stream: TICKETS_HWM.stream,
      scope: TICKETS_HWM.scope,
      cursor: null,
      high_water_mark: hwm,
      status: 'complete',
      pages: crawl.pages,
      rows: crawl.rows,
    };
    let deleted = 0;
    if (input.deletionSince) {
      const now = deps.now?.() ?? new Date();
      deleted = await destination.markDeletedNotSeenSince(
        'tickets',
        new Date(input.deletionSince),
        now,
        update,
      );
    } else {
      await destination.writeCheckpoints([update]);
    }
    return { deleted, highWaterMark: hwm };
  };
}
