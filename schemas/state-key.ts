import { z } from 'zod';

/**
 * Where a state row belongs: one typed key for every kind of state the sync keeps, and the one encoder and
 * decoder between it and the row's `(stream, scope)` address. Every reader and writer of state goes through
 * these two functions, so a scope's text format is written in this file only. The destinations keep a
 * `thread` key's row in `_thread_queue` (keyed by the integer ticket number), a `reread` key's in
 * `_reread_queue` (keyed by pass and window), every other in `_sync_state` (connectors/state-tables.ts;
 * BigQuery's flush restates the two queue addresses in SQL: bigquery/state-sql.ts).
 */

const Name = z.string().min(1);
/** A window bound: an instant as the API writes it; never holds `/`, the separator of the two bounds. */
const Bound = z
  .string()
  .min(1)
  .refine((s) => !s.includes('/') && Number.isFinite(Date.parse(s)), 'an instant without "/"');

export const StateKey = z.discriminatedUnion('kind', [
  /** The newest source time a stream or export pass has synced: incremental runs start there (minus the look-back). */
  z.object({ kind: z.literal('high_water_mark'), stream: Name }),
  /**
   * The sweep of the whole ticket list: `cursor` where it is, `high_water_mark` when it began (warehouse
   * clock); a complete sweep marks deleted every ticket not seen since then.
   */
  z.object({ kind: z.literal('sweep') }),
  /** The oldest `created_at` a complete sweep listed: where the workspace's history begins. */
  z.object({ kind: z.literal('oldest_ticket') }),
  /** A run's pass over the newest tickets, named by the run's upper bound. */
  z.object({ kind: z.literal('head_pass'), before: Name.refine((s) => !s.includes('/'), 'no "/"') }),
  /** One window `[from, before)` of an export pass, page by page. */
  z.object({ kind: z.literal('window'), pass: Name, from: Bound, before: Bound }),
  /**
   * A window the audit queued for a re-read (a row of it differed from the source), `running` while
   * queued; scheduled runs plan the window until its own `window` key completed after it was queued.
   */
  z.object({ kind: z.literal('reread'), pass: Name, from: Bound, before: Bound }),
  /**
   * A ticket's thread in the thread queue: `running` while it is to be read, `complete` (with `updated_at`
   * = when) once read, `failed` when its read failed.
   */
  z.object({ kind: z.literal('thread'), ticketNumber: z.number().int().positive() }),
  /** One snapshot of a reference stream, taken by one run. */
  z.object({ kind: z.literal('snapshot'), stream: Name, runId: Name }),
  /** A saved report query; `high_water_mark` = when it was last taken. */
  z.object({ kind: z.literal('report'), query: Name }),
]);
export type StateKey = z.infer<typeof StateKey>;
export type StateKeyKind = StateKey['kind'];
export type StateKeyOf<K extends StateKeyKind> = Extract<StateKey, { kind: K }>;

/**
 * Each kind's row, as `docs/warehouse.md` describes it (kept beside the encoder below): the table that holds
 * it, and there its `(stream, scope)` — a `thread` key's row is the `_thread_queue` row of its ticket
 * number; its address (stream, scope) is how `_rejected` and staged checkpoints name it.
 */
export const STATE_KEY_FORMATS: {
  readonly [K in StateKeyKind]: {
    table: '_sync_state' | '_thread_queue' | '_reread_queue';
    stream: string;
    scope: string;
    what: string;
  };
} = {
  high_water_mark: {
    table: '_sync_state',
    stream: 'the stream or export pass',
    scope: 'hwm',
    what: 'high_water_mark = the newest source time synced; incremental runs start there minus the look-back',
  },
  sweep: {
    table: '_sync_state',
    stream: 'tickets',
    scope: 'sweep',
    what: 'the sweep of the whole ticket list; high_water_mark = when it began',
  },
  oldest_ticket: {
    table: '_sync_state',
    stream: 'tickets',
    scope: 'oldest',
    what: 'high_water_mark = the oldest created_at a complete sweep listed: where the history starts',
  },
  head_pass: {
    table: '_sync_state',
    stream: 'tickets',
    scope: 'head/<before>',
    what: "a run's pass over the newest tickets",
  },
  window: {
    table: '_sync_state',
    stream: 'the export pass',
    scope: '<from>/<before>',
    what: 'one window of an export pass',
  },
  reread: {
    table: '_reread_queue',
    stream: 'the export pass',
    scope: 'reread/<from>/<before> (the row is the pass, window_start and window_end of _reread_queue)',
    what: 'a window the audit queued for a re-read (running until a run has read the window again)',
  },
  thread: {
    table: '_thread_queue',
    stream: 'ticket_messages',
    scope: 'the ticket number (the row is the ticket_number of _thread_queue)',
    what: 'the thread queue: running = to read, complete = read at updated_at, failed = retried by the next run',
  },
  snapshot: {
    table: '_sync_state',
    stream: 'the reference stream',
    scope: 'run:<run id>',
    what: "one run's snapshot",
  },
  report: {
    table: '_sync_state',
    stream: 'report_snapshots',
    scope: "the query's name",
    what: 'a saved report query; high_water_mark = when it was last taken',
  },
};

/** A state row's address: a `_sync_state` row, or (a `thread` or `reread` key) the row of its queue table. */
export interface StateAddress {
  stream: string;
  scope: string;
}

/**
 * The stream of a `thread` key's address (its scope is the ticket number): how `_rejected` rows and staged
 * checkpoints name a thread. The queue itself is the table `_thread_queue` (connectors/state-tables.ts).
 */
export const THREAD_QUEUE_STREAM = 'ticket_messages';
/** `_sync_state` stream of report snapshots (its scopes are query names). */
export const REPORT_SNAPSHOTS_STREAM = 'report_snapshots';
/** The scope of every high-water mark; the `sync_coverage` view joins on it. */
export const HIGH_WATER_MARK_SCOPE = 'hwm';

const TICKETS = 'tickets';
const HEAD_PREFIX = 'head/';
const REREAD_PREFIX = 'reread/';
const SNAPSHOT_PREFIX = 'run:';
const TICKET_NUMBER = /^[1-9][0-9]*$/;

/** The `(stream, scope)` of a key; a key that breaks its schema fails naming the field. */
export function encodeStateKey(key: StateKey): StateAddress {
  const k = StateKey.parse(key);
  switch (k.kind) {
    case 'high_water_mark':
      return { stream: k.stream, scope: HIGH_WATER_MARK_SCOPE };
    case 'sweep':
      return { stream: TICKETS, scope: 'sweep' };
    case 'oldest_ticket':
      return { stream: TICKETS, scope: 'oldest' };
    case 'head_pass':
      return { stream: TICKETS, scope: `${HEAD_PREFIX}${k.before}` };
    case 'window':
      return { stream: k.pass, scope: `${k.from}/${k.before}` };
    case 'reread':
      return { stream: k.pass, scope: `${REREAD_PREFIX}${k.from}/${k.before}` };
    case 'thread':
      return { stream: THREAD_QUEUE_STREAM, scope: String(k.ticketNumber) };
    case 'snapshot':
      return { stream: k.stream, scope: `${SNAPSHOT_PREFIX}${k.runId}` };
    case 'report':
      return { stream: REPORT_SNAPSHOTS_STREAM, scope: k.query };
  }
}

/**
 * The key of a `_sync_state` row (or of a `_rejected` row's stream and scope); null when no key encodes
 * to it — a row the sync never writes (put there by hand), which each reader may skip or show as it is.
 */
export function decodeStateKey(at: StateAddress): StateKey | null {
  const { stream, scope } = at;
  const candidate = candidateKey(stream, scope);
  if (candidate === null) return null;
  const parsed = StateKey.safeParse(candidate);
  if (!parsed.success) return null;
  // Only a key that encodes back to the same row is that row's key (`007` is no ticket number).
  const back = encodeStateKey(parsed.data);
  return back.stream === stream && back.scope === scope ? parsed.data : null;
}

function candidateKey(stream: string, scope: string): unknown {
  if (stream === THREAD_QUEUE_STREAM) {
    return TICKET_NUMBER.test(scope) ? { kind: 'thread', ticketNumber: Number(scope) } : null;
  }
  if (stream === REPORT_SNAPSHOTS_STREAM) return { kind: 'report', query: scope };
  if (scope === HIGH_WATER_MARK_SCOPE) return { kind: 'high_water_mark', stream };
  if (stream === TICKETS) {
    if (scope === 'sweep') return { kind: 'sweep' };
    if (scope === 'oldest') return { kind: 'oldest_ticket' };
    if (scope.startsWith(HEAD_PREFIX)) return { kind: 'head_pass', before: scope.slice(HEAD_PREFIX.length) };
    return null;
  }
  if (scope.startsWith(SNAPSHOT_PREFIX)) {
    return { kind: 'snapshot', stream, runId: scope.slice(SNAPSHOT_PREFIX.length) };
  }
  const reread = scope.startsWith(REREAD_PREFIX);
  const bounds = (reread ? scope.slice(REREAD_PREFIX.length) : scope).split('/');
  if (bounds.length !== 2) return null;
  const [from, before] = bounds;
  return { kind: reread ? 'reread' : 'window', pass: stream, from, before };
}

/** The key of `at` when it is of `kind`, else null. */
export function decodeStateKeyOf<K extends StateKeyKind>(kind: K, at: StateAddress): StateKeyOf<K> | null {
  const key = decodeStateKey(at);
  return key?.kind === kind ? (key as StateKeyOf<K>) : null;
}

/** The key of `at`, which must be of `kind`: a row of another format fails naming it. */
export function requireStateKey<K extends StateKeyKind>(kind: K, at: StateAddress): StateKeyOf<K> {
  const key = decodeStateKeyOf(kind, at);
  if (key === null) {
    throw new Error(
      `_sync_state row (stream ${JSON.stringify(at.stream)}, scope ${JSON.stringify(at.scope)}) is no ${kind} key`,
    );
  }
  return key;
}

/** The thread-queue key of a ticket number as the queue's listing and the workflows carry it (its scope). */
export function threadKeyOf(scope: string): StateKeyOf<'thread'> {
  return requireStateKey('thread', { stream: THREAD_QUEUE_STREAM, scope });
}

/**
 * A thread whose read failed is also recorded in the run ledger (`_sync_runs`, where `status` shows it with
 * the API's code and request id): the row of its `thread` key, one per thread (its next failure replaces it).
 * These two functions are the one format of that row's ids.
 */
const THREAD_FAILURE_PREFIX = 'thread:';

/** The ids of the `_sync_runs` row recording the failure of a thread key's read. */
export function encodeThreadFailure(key: StateKeyOf<'thread'>): {
  run_id: string;
  workflow_id: string;
  stream: typeof THREAD_QUEUE_STREAM;
} {
  const { scope } = encodeStateKey(key);
  return {
    run_id: `${THREAD_FAILURE_PREFIX}${scope}`,
    workflow_id: `${THREAD_QUEUE_STREAM}/${scope}`,
    stream: THREAD_QUEUE_STREAM,
  };
}

/** The thread key whose failure a `_sync_runs` row records; null for every other row (runs and windows). */
export function decodeThreadFailure(row: {
  run_id: string;
  stream: string | null;
}): StateKeyOf<'thread'> | null {
  if (row.stream !== THREAD_QUEUE_STREAM || !row.run_id.startsWith(THREAD_FAILURE_PREFIX)) return null;
  const scope = row.run_id.slice(THREAD_FAILURE_PREFIX.length);
  return decodeStateKeyOf('thread', { stream: THREAD_QUEUE_STREAM, scope });
}
