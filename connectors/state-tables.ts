import {
  decodeStateKey,
  decodeStateKeyOf,
  encodeStateKey,
  STATE_KEY_FORMATS,
  type StateAddress,
} from '../schemas/state-key.js';
import { Checkpoint, RereadQueueEntry, SYSTEM_TABLES, ThreadQueueEntry } from '../schemas/warehouse.js';

/*
 * Which table holds a checkpoint, by its key's kind (STATE_KEY_FORMATS): a `thread` key's in `_thread_queue`
 * (one row per ticket number), a `reread` key's in `_reread_queue` (one row per export window), every other
 * key's in `_sync_state`. Readers and writers keep speaking checkpoints of StateKeys; only the destinations'
 * storage goes through here, and each state table is one entry below: its key columns, how a checkpoint's
 * address becomes them and how a row becomes its checkpoint again.
 */

export type StateTableName = (typeof STATE_KEY_FORMATS)[keyof typeof STATE_KEY_FORMATS]['table'];

/** The state tables that hold one kind of key each (every other kind is `_sync_state`'s). */
export type QueueTableName = Exclude<StateTableName, '_sync_state'>;

/** The value of a key column: text, or (the ticket number) an integer. */
export type KeyValue = string | number;

export interface StateTable {
  readonly name: StateTableName;
  /** Its primary key, in order; every other column is a checkpoint's (cursor … updated_at). */
  readonly keyColumns: readonly string[];
  /** The key columns of a checkpoint this table holds (in keyColumns' order); null: another table's. */
  keyOf(at: StateAddress): KeyValue[] | null;
  /** A row of the table as the checkpoint of its key. */
  checkpointOf(row: unknown): Checkpoint;
  /** The column a listing by stream compares with (`_thread_queue` is never listed by stream). */
  readonly streamColumn: string | null;
}

const threadQueue: StateTable = {
  name: '_thread_queue',
  keyColumns: SYSTEM_TABLES._thread_queue.primaryKey,
  keyOf: (at) => {
    const key = decodeStateKeyOf('thread', at);
    return key ? [key.ticketNumber] : null;
  },
  checkpointOf: (row) => {
    const { ticket_number, ...state } = ThreadQueueEntry.parse(row);
    return Checkpoint.parse({ ...encodeStateKey({ kind: 'thread', ticketNumber: ticket_number }), ...state });
  },
  streamColumn: null,
};

const rereadQueue: StateTable = {
  name: '_reread_queue',
  keyColumns: SYSTEM_TABLES._reread_queue.primaryKey,
  keyOf: (at) => {
    const key = decodeStateKeyOf('reread', at);
    return key ? [key.pass, key.from, key.before] : null;
  },
  checkpointOf: (row) => {
    const { pass, window_start, window_end, ...state } = RereadQueueEntry.parse(row);
    const at = encodeStateKey({ kind: 'reread', pass, from: window_start, before: window_end });
    return Checkpoint.parse({ ...at, ...state });
  },
  streamColumn: 'pass',
};

const syncState: StateTable = {
  name: '_sync_state',
  keyColumns: SYSTEM_TABLES._sync_state.primaryKey,
  keyOf: (at) => [at.stream, at.scope],
  checkpointOf: (row) => Checkpoint.parse(row),
  streamColumn: 'stream',
};

/** Every state table; `_sync_state`, which holds every other key, last. */
export const STATE_TABLES: readonly StateTable[] = [threadQueue, rereadQueue, syncState];

/** The state table named `name`. */
export function stateTableNamed(name: StateTableName): StateTable {
  return STATE_TABLES.find((t) => t.name === name)!;
}

/** The table that holds the checkpoint at `at` (a row the sync never writes stays in `_sync_state`). */
export function stateTableOf(at: StateAddress): StateTable {
  const key = decodeStateKey(at);
  return stateTableNamed(key ? STATE_KEY_FORMATS[key.kind].table : '_sync_state');
}

/** The ticket number of a thread-queue checkpoint, null for a checkpoint another table holds. */
export function queuedTicketOf(at: StateAddress): number | null {
  return decodeStateKeyOf('thread', at)?.ticketNumber ?? null;
}

/** Checkpoints grouped by the table that holds them (tables without any left out), each in the order given. */
export function byStateTable<T extends StateAddress>(
  list: readonly T[],
): { table: StateTable; entries: { key: KeyValue[]; checkpoint: T }[] }[] {
  const groups = new Map<StateTable, { key: KeyValue[]; checkpoint: T }[]>();
  for (const checkpoint of list) {
    const table = stateTableOf(checkpoint);
    const entries = groups.get(table) ?? [];
    entries.push({ key: table.keyOf(checkpoint)!, checkpoint });
    groups.set(table, entries);
  }
  return STATE_TABLES.flatMap((table) => {
    const entries = groups.get(table);
    return entries ? [{ table, entries }] : [];
  });
}

/** The columns of a state table's rows, in the table's order. */
export const stateColumnsOf = (table: StateTable): string[] =>
  SYSTEM_TABLES[table.name].columns.map((c) => c.name);

/** What every state table holds after its key: a checkpoint's columns but its address (cursor … updated_at). */
export const CHECKPOINT_BODY = Object.keys(Checkpoint.omit({ stream: true, scope: true }).shape) as Exclude<
  keyof Checkpoint,
  'stream' | 'scope'
>[];
