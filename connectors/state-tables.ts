import { decodeStateKeyOf, encodeStateKey, type StateAddress } from '../schemas/state-key.js';
import { Checkpoint, ThreadQueueEntry } from '../schemas/warehouse.js';

/*
 * Which table holds a checkpoint, by its key's kind: a `thread` key's in `_thread_queue` (one row per
 * ticket number), every other key's in `_sync_state`. Readers and writers keep speaking checkpoints of
 * StateKeys; only the destinations' storage goes through here.
 */

/** The ticket number of a thread-queue checkpoint, null for a checkpoint `_sync_state` holds. */
export function queuedTicketOf(at: StateAddress): number | null {
  return decodeStateKeyOf('thread', at)?.ticketNumber ?? null;
}

/** Checkpoints split by the table that holds them, each list in the order given. */
export function byStateTable<T extends StateAddress>(
  list: readonly T[],
): { syncState: T[]; threadQueue: { ticketNumber: number; checkpoint: T }[] } {
  const syncState: T[] = [];
  const threadQueue: { ticketNumber: number; checkpoint: T }[] = [];
  for (const checkpoint of list) {
    const ticketNumber = queuedTicketOf(checkpoint);
    if (ticketNumber === null) syncState.push(checkpoint);
    else threadQueue.push({ ticketNumber, checkpoint });
  }
  return { syncState, threadQueue };
}

/** A `_thread_queue` row as the checkpoint of its `thread` key. */
export function checkpointOfQueueEntry(row: unknown): Checkpoint {
  const { ticket_number, ...state } = ThreadQueueEntry.parse(row);
  return Checkpoint.parse({ ...encodeStateKey({ kind: 'thread', ticketNumber: ticket_number }), ...state });
}

/** The columns of a `_thread_queue` row, in the table's order. */
export const THREAD_QUEUE_COLUMNS = Object.keys(ThreadQueueEntry.shape);
