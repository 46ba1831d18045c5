import { createHash } from 'node:crypto';
import { z } from 'zod';
import { Timestamp } from '../api/index.js';
import { AUDIT_TABLE_NAMES } from '../audit.js';
import { SyncMode } from '../run-input.js';
import { STATE_KEY_FORMATS } from '../state-key.js';
import { type ColumnSpec, deriveColumns } from './derive.js';
import {
  SCHEMA_CHANGE_COLUMN_DESCRIPTIONS,
  SCHEMA_CHANGE_KEY,
  SCHEMA_CHANGES_DESCRIPTION,
  SchemaChangeRecord,
} from './schema-changes.js';
import { type SystemTableName, TableName } from './table-names.js';
import { canonicalJson } from './values.js';

/**
 * The bookkeeping tables — checkpoints (`_sync_state`), the run ledger (`_sync_runs`), reconciliation
 * (`_reconciliation`), items set aside (`_rejected`), schema drift (`_schema_changes`, its rows in
 * schema-changes.ts) and the field-level audit (`_audit`) — as zod schemas of their rows, with the columns
 * derived from them for DDL and docs; and `Freshness`, what `status` reads from them.
 */

export const CheckpointStatus = z.enum(['running', 'complete', 'failed']);
export type CheckpointStatus = z.infer<typeof CheckpointStatus>;

/** A row of `_sync_state`: how far one stream got in one scope; its (stream, scope) encodes a StateKey (schemas/state-key.ts). */
export const Checkpoint = z.object({
  stream: z.string().min(1),
  scope: z.string().min(1),
  cursor: z.string().nullable(),
  high_water_mark: z.string().nullable(),
  status: CheckpointStatus,
  pages: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  updated_at: Timestamp,
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/**
 * A row of `_thread_queue`: a ticket whose thread the sync tracks (StateKey `thread`), with what its
 * checkpoint holds — the queue keeps the thread's state apart from `_sync_state` so SQL joins it to tickets
 * on the integer ticket number.
 */
export const ThreadQueueEntry = Checkpoint.omit({ stream: true, scope: true }).extend({
  ticket_number: z.number().int().positive(),
});
export type ThreadQueueEntry = z.infer<typeof ThreadQueueEntry>;

/**
 * A row of `_reread_queue`: an export window the audit queued for a re-read (StateKey `reread`). The bounds
 * stay the text the window's own checkpoint is addressed by, so the entry finds that checkpoint exactly.
 */
export const RereadQueueEntry = Checkpoint.omit({ stream: true, scope: true }).extend({
  pass: z.string().min(1),
  window_start: z.string().min(1),
  window_end: z.string().min(1),
});
export type RereadQueueEntry = z.infer<typeof RereadQueueEntry>;

/** What a writer sends: a checkpoint without `updated_at` (the destination sets it). */
export const CheckpointUpdate = Checkpoint.omit({ updated_at: true });
export type CheckpointUpdate = z.infer<typeof CheckpointUpdate>;

/**
 * How current the warehouse's tickets and threads are known to be (read by `status`). A ticket's state is
 * verified when a list page served it (`_synced_at`, touched even when unchanged); a thread when its last
 * read completed (the thread-queue checkpoint's `updated_at`).
 */
export const Freshness = z.object({
  tickets: z.object({
    live: z.number().int().nonnegative(),
    /** Oldest `_synced_at` of a live ticket: no ticket state in the warehouse is older than this. */
    oldestVerifiedAt: Timestamp.nullable(),
  }),
  threads: z.object({
    live: z.number().int().nonnegative(),
    /** Live tickets whose thread was never read completely (queued, or in flight). */
    unread: z.number().int().nonnegative(),
    /** Oldest completed thread read of a live ticket. */
    oldestVerifiedAt: Timestamp.nullable(),
  }),
});
export type Freshness = z.infer<typeof Freshness>;

export const SyncRunStatus = z.enum(['running', 'succeeded', 'incomplete', 'failed']);

/** A row of `_sync_runs`: one run or one window. `error` never contains secrets. */
export const SyncRunRecord = z.object({
  run_id: z.string().min(1),
  parent_run_id: z.string().nullable(),
  workflow_id: z.string().min(1),
  stream: z.string().nullable(),
  window_start: Timestamp.nullable(),
  window_end: Timestamp.nullable(),
  mode: SyncMode,
  status: SyncRunStatus,
  started_at: Timestamp,
  finished_at: Timestamp.nullable(),
  pages: z.number().int().nonnegative(),
  rows_written: z.number().int().nonnegative(),
  requests: z.number().int().nonnegative(),
  error: z.string().nullable(),
});
export type SyncRunRecord = z.infer<typeof SyncRunRecord>;

/**
 * `equal` (within the metric's stated tolerance), `mismatch`, `skipped` (not comparable like for like),
 * `moving` (the source's number changed while the sync compared it), `explained` (a difference the warehouse
 * cannot close, the note says why).
 */
export const ReconciliationStatus = z.enum(['equal', 'mismatch', 'skipped', 'moving', 'explained']);
export type ReconciliationStatus = z.infer<typeof ReconciliationStatus>;

/**
 * A row of `_reconciliation`: one number the source reports (e.g. `new_tickets` of one day from the report
 * API, or a saved view's `count`) next to the same number computed from the warehouse. A mismatch is a
 * warning, not a failure: report data can be incomplete or awaiting update (spec 2.11 rule 3), and a view's
 * count can lag the inbox (spec 2.4). `skipped` says what could not be compared honestly, and why.
 */
export const ReconciliationRecord = z.object({
  run_id: z.string().min(1),
  metric: z.string().min(1),
  period: z.string().min(1),
  source_value: z.number().nullable(),
  warehouse_value: z.number().nullable(),
  status: ReconciliationStatus,
  note: z.string().nullable(),
  checked_at: Timestamp,
});
export type ReconciliationRecord = z.infer<typeof ReconciliationRecord>;

/**
 * An item the sync set aside instead of storing — what a writer sends in `WriteBatch.rejected`. The page it
 * came from is still written and its checkpoint moves, so one bad item cannot stop a sync; the item waits in
 * `_rejected` until a later batch stores a row with its id.
 */
export const RejectedItem = z.object({
  /** Table the item was meant for. */
  table: TableName,
  /** Identity of the entry: the item id when it has one, else a hash of the raw item (see rejectedItemKey). */
  itemKey: z.string().min(1),
  itemId: z.string().min(1).nullable(),
  stream: z.string().min(1),
  /** The window or scope being read (a checkpoint scope). */
  scope: z.string().min(1),
  /** The cursor the page was fetched with (null: the first page). */
  pageCursor: z.string().nullable(),
  /** Why it was set aside; never secrets. */
  reason: z.string().min(1),
  /** The item as received (the destination applies the column policy to it before storing it). */
  raw: z.unknown(),
});
export type RejectedItem = z.infer<typeof RejectedItem>;

/** `itemKey` of a rejected item: its id when it has one, else `sha256:<hex>` of its canonical JSON. */
export function rejectedItemKey(itemId: string | null | undefined, raw: unknown): string {
  if (itemId) return itemId;
  return `sha256:${createHash('sha256').update(canonicalJson(raw)).digest('hex')}`;
}

/** A row of `_rejected`: one set-aside item, upserted by (table_name, item_key) each time it is seen. */
export const RejectedRecord = z.object({
  table_name: z.string().min(1),
  item_key: z.string().min(1),
  item_id: z.string().nullable(),
  stream: z.string().min(1),
  scope: z.string().min(1),
  page_cursor: z.string().nullable(),
  reason: z.string(),
  raw: z.unknown(),
  first_seen_at: Timestamp,
  last_seen_at: Timestamp,
  times_seen: z.number().int().positive(),
  resolved_at: Timestamp.nullable(),
});
export type RejectedRecord = z.infer<typeof RejectedRecord>;

/**
 * Where the open items of `_rejected` (not resolved) were set aside, one entry per (table, stream, scope)
 * with how many items: what the re-reads need to find them again and what a run reports as missing.
 */
export const OpenRejections = RejectedRecord.pick({ table_name: true, stream: true, scope: true }).extend({
  items: z.number().int().positive(),
});
export type OpenRejections = z.infer<typeof OpenRejections>;

/**
 * What the audit concluded about one row it re-read from the live API (activities/audit/):
 *  - `equal`: every stored field is what the source serves now;
 *  - `differs`: a field differs, and the source did not change the row after the warehouse stored it;
 *  - `missing_in_warehouse`: the source serves a row the warehouse does not hold (live), although it
 *    existed when the warehouse last read its range;
 *  - `missing_in_source`: the warehouse holds a live row the source no longer serves;
 *  - `changed_since`: the fields differ, but the source changed the row after the warehouse last read it —
 *    the next run brings it; not a difference of the sync.
 */
export const AuditVerdict = z.enum([
  'equal',
  'differs',
  'missing_in_warehouse',
  'missing_in_source',
  'changed_since',
]);
export type AuditVerdict = z.infer<typeof AuditVerdict>;

/** The verdicts that say the warehouse was wrong (what the audit's share and bound count). */
export const DIFFERING_VERDICTS: readonly AuditVerdict[] = [
  'differs',
  'missing_in_warehouse',
  'missing_in_source',
];

/** A row of `_audit`: one row of a data table the audit compared with the live API in one run. */
export const AuditRecord = z.object({
  run_id: z.string().min(1),
  table_name: z.string().min(1),
  row_id: z.string().min(1),
  verdict: AuditVerdict,
  /** JSON text: `[{ field, warehouse, source }]`, values as `_audit` renders them (activities/audit/render.ts). */
  differences: z.string().nullable(),
  synced_at: Timestamp.nullable(),
  source_version: Timestamp.nullable(),
  healed: z.boolean(),
  checked_at: Timestamp,
});
export type AuditRecord = z.infer<typeof AuditRecord>;

/** A bookkeeping table as DDL and docs need it. */
export interface SystemTableSpec<T extends SystemTableName = SystemTableName> {
  readonly name: T;
  readonly description: string;
  readonly primaryKey: readonly string[];
  readonly columns: readonly ColumnSpec[];
}

/** A bookkeeping table's spec, its columns derived from the zod schema of its rows (never restated). */
function systemTable<T extends SystemTableName>(
  name: T,
  rowSchema: z.ZodObject,
  def: Omit<SystemTableSpec<T>, 'name' | 'columns'> & { readonly descriptions: Record<string, string> },
): SystemTableSpec<T> {
  const { descriptions, ...rest } = def;
  return { name, ...rest, columns: deriveColumns(name, rowSchema, { descriptions }) };
}

/** Columns of the bookkeeping tables, for DDL and docs (derived from the zod schemas above). */
export const SYSTEM_TABLES: { readonly [T in SystemTableName]: SystemTableSpec<T> } = {
  _sync_state: systemTable('_sync_state', Checkpoint, {
    description:
      'Checkpoints: one row per (stream, scope), written in the same transaction as the rows of the page it describes.',
    primaryKey: ['stream', 'scope'],
    descriptions: {
      stream: 'Stream or export pass (tickets, agent_sessions, report_snapshots, …).',
      scope: `What the checkpoint covers, by stream: ${Object.values(STATE_KEY_FORMATS)
        .filter((f) => f.table === '_sync_state')
        .map((f) => `${f.stream}: "${f.scope}" (${f.what})`)
        .join(
          '; ',
        )}. The thread queue and the re-read queue are not here: they are the tables _thread_queue and _reread_queue.`,
      cursor: 'API cursor of the next page to fetch; null when the scope is complete or not started.',
      high_water_mark: 'Highest source timestamp seen in the scope (ISO 8601), if the stream has one.',
      status: 'running, complete or failed.',
      pages: 'Pages written in this scope so far.',
      rows: 'Rows written in this scope so far.',
      updated_at: 'When the checkpoint was last written.',
    },
  }),
  _thread_queue: systemTable('_thread_queue', ThreadQueueEntry, {
    description:
      'The thread queue: one row per ticket whose thread the sync tracks, written in the same transaction as the page of tickets that queued it or the thread page that read it.',
    primaryKey: ['ticket_number'],
    descriptions: {
      ticket_number: 'The ticket whose thread this is (tickets.ticket_number). Primary key.',
      cursor: 'API cursor of the next page of the thread; null when read completely or not started.',
      high_water_mark: "The ticket's updated_at when it was queued: the version the thread must be read at.",
      status: `${STATE_KEY_FORMATS.thread.what}.`,
      pages: 'Pages of the thread written by its current read.',
      rows: 'Messages written by its current read.',
      updated_at:
        'When the entry was last written: for a complete entry, when the thread was last read completely.',
    },
  }),
  _reread_queue: systemTable('_reread_queue', RereadQueueEntry, {
    description:
      'Export windows the audit queued for a re-read: one row per window, written with the audit corrections that found a row of it differing.',
    primaryKey: ['pass', 'window_start', 'window_end'],
    descriptions: {
      pass: 'The export pass of the window (`<stream>.<pass>`, or the stream of an export read in one pass: agent_sessions, …).',
      window_start: "The window's start (inclusive), as its checkpoint in _sync_state names it.",
      window_end: "The window's end (exclusive), as its checkpoint in _sync_state names it.",
      cursor: 'Always null: the re-read itself runs as the window, under its own checkpoint.',
      high_water_mark: 'Always null.',
      status: `${STATE_KEY_FORMATS.reread.what}.`,
      pages: 'Always 0.',
      rows: 'Always 0.',
      updated_at:
        "When the window was queued: the entry is pending until the window's own checkpoint completes after this.",
    },
  }),
  _sync_runs: systemTable('_sync_runs', SyncRunRecord, {
    description:
      'One row per sync run or window workflow, upserted by run_id while it runs and when it ends.',
    primaryKey: ['run_id'],
    descriptions: {
      run_id: 'Run id (Temporal run id or our own). Primary key.',
      parent_run_id: 'The run this window belongs to; null for a top-level run.',
      workflow_id: 'Temporal workflow id (e.g. tickets/<from>/<before>).',
      stream: 'Stream of a window run; null for a top-level run.',
      window_start: 'Window start (inclusive); null when not windowed.',
      window_end: 'Window end (exclusive); null when not windowed.',
      mode: 'incremental, full_refresh, backfill or replay.',
      status:
        'running, succeeded, incomplete (every stream ran but items were set aside or threads failed; see error) or failed.',
      started_at: 'When the run started.',
      finished_at: 'When the run ended; null while running.',
      pages: 'Pages fetched.',
      rows_written: 'Rows written.',
      requests:
        'HTTP requests sent to the API, retries included (each activity counts its own attempts; a window of a stream is one route class; a run adds its windows and its reconciliation).',
      error: 'Failure summary (API code, request id, stream/window); never secrets.',
    },
  }),
  _reconciliation: systemTable('_reconciliation', ReconciliationRecord, {
    description:
      "What the sync holds compared with the source's own numbers, after each run that synced tickets: the tie-out of every metric the BI views compute that the report API serves (new_tickets, resolved_tickets, reopened_tickets, tickets_replied_to, answered_tickets, csat_responses, agent_online_time per UTC day; customer_first_response_time, human_first_response_time, full_resolution_time and csat_average per day and per period; backlog_now now), and each saved view's count against the warehouse where its filters can be computed there. Each note says the rule that makes the two numbers comparable. A mismatch is a warning with its context (report data can be incomplete or awaiting update, spec 2.11 rule 3), never a failed run; `status` lists mismatches.",
    primaryKey: ['run_id', 'metric', 'period'],
    descriptions: {
      run_id: 'Run the check followed. Primary key with metric and period.',
      metric:
        'What was compared: a report metric id (new_tickets, resolved_tickets, …), or view_count:<view name>.',
      period:
        'Day (YYYY-MM-DD, UTC) for daily values (the last day is the run\'s day so far); FROM..UNTIL (both days included) for a period value; "now" for current counts.',
      source_value: "The source's number (report API, view count).",
      warehouse_value: 'The same number computed from the warehouse; null when skipped.',
      status:
        'equal (within the tolerance the note states), mismatch (a warning, see note), skipped (not comparable honestly), moving (the source changed its number while the sync compared: read again after the comparison, the note gives both readings) or explained (a difference the warehouse cannot close: the note says why).',
      note: 'The rule that makes the numbers comparable, and why they can differ.',
      checked_at: 'When the comparison was made.',
    },
  }),
  _rejected: systemTable('_rejected', RejectedRecord, {
    description:
      "Items the sync set aside instead of storing (e.g. an item that breaks its table's schema): one row per (table_name, item_key), written in the same transaction as the page it came from, whose rows and checkpoint still commit. Seen again: last_seen_at moves and times_seen grows. Resolved (resolved_at set) when a later batch of the table stores a row with its id. Unresolved entries: `WHERE resolved_at IS NULL` (status and the run summary count them).",
    primaryKey: ['table_name', 'item_key'],
    descriptions: {
      table_name: 'Table the item was meant for. Primary key with item_key.',
      item_key:
        'The item id when it has one, else sha256:<hex> of the raw item. Primary key with table_name.',
      item_id: 'The item id; null when the item has none (or none could be read).',
      stream: 'Stream that read the item.',
      scope: 'Window or scope being read (the checkpoint scope).',
      page_cursor: 'Cursor the page was fetched with; null for a first page.',
      reason: 'Why the item was set aside (the failed field and rule); never secrets.',
      raw: 'The item as received (its last sighting), with the fields SYNC_COLUMN_POLICY names hashed or removed.',
      first_seen_at: 'When the sync first set the item aside.',
      last_seen_at: 'When the sync last set it aside (the batch stamp).',
      times_seen: 'How many batches set it aside.',
      resolved_at:
        'When a later batch stored a row with its id; null while unresolved (a new rejection resets it).',
    },
  }),
  _schema_changes: systemTable('_schema_changes', SchemaChangeRecord, {
    description: SCHEMA_CHANGES_DESCRIPTION,
    primaryKey: SCHEMA_CHANGE_KEY,
    descriptions: SCHEMA_CHANGE_COLUMN_DESCRIPTIONS,
  }),
  _audit: systemTable('_audit', AuditRecord, {
    description: `The field-level audit: rows of ${AUDIT_TABLE_NAMES.join(', ')} re-read from the live API after a run (a small share of each class's budget, SYNC_AUDIT_SHARE) or by \`audit --sample N\`, one row per (run, table, row) with the verdict and the fields that differ. A differing or missing row is rewritten at once and its thread or export window queued for a re-read (healed). \`status\` shows per table the sample, the share that differs and its 95 % upper bound.`,
    primaryKey: ['run_id', 'table_name', 'row_id'],
    descriptions: {
      run_id: 'Run (or on-demand audit) that compared the row. Primary key with table_name and row_id.',
      table_name: `Table of the row (${AUDIT_TABLE_NAMES.join(', ')}).`,
      row_id: 'Id of the row.',
      verdict:
        'What the audit concluded; changed_since: the source changed the row after the warehouse last read it (not a difference).',
      differences:
        'JSON text, [{field, warehouse, source}]: each stored field that differs, with both values (typed columns by name, other fields of the item as _raw.<key>); null when none.',
      synced_at: "The row's _synced_at when it was compared (when a sync last received it).",
      source_version:
        "The source's version of the row (updated_at; coalesce(submitted_at, sent_at) for surveys; created_at for messages), when it has one.",
      healed:
        'The row was rewritten from the API (or marked deleted) at once, and its thread or export window queued for a re-read.',
      checked_at: 'When the row was compared.',
    },
  }),
};
