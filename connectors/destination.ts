import type { AuditCounts, AuditSeed } from '../schemas/audit.js';
import type {
  AuditRecord,
  Checkpoint,
  CheckpointStatus,
  CheckpointUpdate,
  Freshness,
  OpenRejections,
  ReconciliationRecord,
  Redactor,
  RejectedItem,
  RowInputs,
  SchemaChangeRecord,
  SchemaChangeSighting,
  StoredVersion,
  SyncRunRecord,
  TableName,
  TableSpec,
  WarehouseScope,
} from '../schemas/warehouse.js';
import type { SqlDialect, ViewSpec } from '../schemas/warehouse-views.js';
import type { RowFilter } from './row-filter.js';
import type { SchemaChangeFilter } from './sql/schema-changes.js';

export interface WriteBatch<T extends TableName = TableName> {
  readonly table: T;
  readonly rows: readonly RowInputs[T][];
  /**
   * Checkpoint(s) committed in the same transaction as the rows. Several when one page also records other
   * progress, e.g. a tickets page and the thread-queue entries of the tickets whose threads must be fetched.
   */
  readonly checkpoint?: CheckpointUpdate | readonly CheckpointUpdate[];
  /**
   * Ids of live rows the source served again unchanged (so not in `rows`): their `_synced_at` moves to this
   * batch's stamp. `_synced_at` then means "last seen in the source", which is what a complete list sweep
   * needs to mark the rows it did not see, without rewriting the rows it did.
   */
  readonly seen?: readonly string[];
  /**
   * Items of the page set aside instead of stored, upserted into `_rejected` in the same transaction as the
   * rows and checkpoints (so the checkpoint can move past them and nothing is lost). In that transaction,
   * too, every unresolved `_rejected` entry of this table whose item id is a row of `rows` is resolved: the
   * item was stored after all. A batch may hold only rejected items and a checkpoint.
   */
  readonly rejected?: readonly RejectedItem[];
  /**
   * What the page's items hold that their schema does not know (schemas/api/drift.ts), upserted into
   * `_schema_changes` in the same transaction as the rows, by (table, field path, kind, observed): a new key
   * is first seen now; a known one is seen again once per run (pages of a run it was already recorded in
   * leave it alone, without writing).
   */
  readonly schemaChanges?: readonly SchemaChangeSighting[];
  /**
   * Full refresh: a row at an equal version replaces the stored one even when the stored content hash is
   * equal (the stored columns may have been edited in place), so a refresh repairs whatever differs. Never
   * an older version over a newer one.
   */
  readonly repair?: boolean;
}

/**
 * The sync run a page's read or write belongs to. A destination may answer for the run from what it read
 * of a table once for it, counting what it staged since (BigQuery's per-run version cache: one table read
 * instead of a query per page) when its capabilities say `cachesVersionsPerRun`.
 */
export interface RunScope {
  readonly runId?: string | null;
}

/**
 * The page path's write (`writeTables` with it): the rows may stay staged until the next `flushStaged` where
 * the capabilities say `stagesWrites`, and with the page's run (RunScope) rows the table stores as they are
 * may be left out where they say `cachesVersionsPerRun`.
 */
export interface StagedWrite extends RunScope {
  readonly stage: true;
}

/**
 * What a staged write staged: rows of every batch, after those the destination stores as they are were left
 * out (with a run: a page that changed nothing stages nothing, and its window skips its flush).
 */
export interface StageReport {
  readonly rows: number;
}

/** A child table whose rows follow their parent's deletion (messages and surveys of a deleted ticket). */
export interface DeletionCascade {
  readonly child: TableName;
  /** Column of `child` holding the parent's primary key. */
  readonly foreignKey: string;
  readonly parent: TableName;
  /**
   * Also un-delete child rows whose parent is live again. Only where the child is served exactly when its
   * parent is (CSAT surveys, spec 2.7 rule 7); messages come back by the re-read of their thread instead.
   */
  readonly revive: boolean;
}

/** Rows of one table a deletion marks: these ids, or (a full refresh) those not received since an instant. */
export type RowsDeletion =
  | {
      readonly table: TableName;
      readonly ids: readonly string[];
      readonly checkpoint?: CheckpointUpdate | undefined;
    }
  | {
      readonly table: TableName;
      /** Rows not received since this instant (`_synced_at < notSeenSince`). */
      readonly notSeenSince: Date;
      readonly checkpoint?: CheckpointUpdate | undefined;
      /** Only rows inside the range the refresh re-read. */
      readonly within?: DeletionRange | undefined;
      /** Never rows the refresh did not manage to read (see UnreadGuard). */
      readonly unlessUnread?: UnreadGuard | undefined;
    };

/** A child table's rows following their parents' deletion (see DeletionCascade). */
export interface CascadeDeletion {
  readonly cascade: DeletionCascade;
}

/** How many rows a cascade marked deleted, and how many it revived. */
export interface DeletionCounts {
  readonly marked: number;
  readonly revived: number;
}

/** The part of a table a full refresh re-read: rows whose timestamp `column` is at or after `from`. */
export interface DeletionRange {
  readonly column: string;
  readonly from: Date;
}

/**
 * What a full refresh did not read, so must not flag: rows whose `column` holds the ticket number of a
 * `_thread_queue` entry that is not `complete` — the messages of a thread whose read failed or is still
 * queued this run (`{ column: 'ticket_number' }`).
 */
export interface UnreadGuard {
  readonly column: string;
}

/** Which checkpoints `listCheckpoints` lists (e.g. `{ threadQueue: true, status: 'running', limit: 50 }`). */
export interface CheckpointFilter {
  /**
   * The thread queue's entries (checkpoints of `thread` keys, `_thread_queue`), in ticket-number order,
   * instead of every other checkpoint (`_sync_state`, `_reread_queue`), in (stream, scope) order.
   */
  readonly threadQueue?: boolean;
  /** Only this stream's (not of the thread queue, whose entries all have one). */
  readonly stream?: string;
  readonly status?: CheckpointStatus;
  /**
   * Only these scopes (a thread batch's entries: one listing instead of a read per thread, where the
   * capabilities do not say `remembersCheckpointTags`).
   */
  readonly scopes?: readonly string[];
  /** At most this many, in the listing's order. */
  readonly limit?: number;
}

export interface WriteResult {
  received: number;
  inserted: number;
  updated: number;
  unchanged: number;
}

/** Test and operations hooks. `beforeMerge` runs after staging, before the merge, inside the transaction. */
export interface DestinationHooks {
  beforeMerge?: (table: TableName) => Promise<void> | void;
}

/**
 * What a destination does beyond the contract's least (dlt's destination capabilities): declared once per
 * destination, so a caller asks here instead of handing options a destination without the capability would
 * have to ignore, and no code outside the connectors asks which warehouse it is.
 */
export interface DestinationCapabilities {
  /**
   * A staged write (StagedWrite) only stages: rows reach their tables at the next `flushStaged` (BigQuery: Storage Write API
   * appends, merged per table by a flush). Without it a staged write is written and merged at once, and
   * there is never anything to flush.
   */
  readonly stagesWrites: boolean;
  /**
   * `readCheckpoint` may answer from the checkpoints this process wrote or listed when the caller's
   * `lastSeenTag` matches (one process's page after page costs no read). Without it every read reads.
   */
  readonly remembersCheckpointTags: boolean;
  /**
   * With a run (RunScope), `storedVersions` answers from what it read of the table once for the run, and
   * a staged write leaves out rows the table stores as they are. Without it both work as without a run.
   */
  readonly cachesVersionsPerRun: boolean;
}

/** What the connectors' named queries (connectors/queries/) run on: one read-only SELECT at a time. */
export type SqlReader = Pick<StateReads, 'select'>;

/*
 * The Destination, grouped by what a caller does with it. Callers keep taking a `Destination`; a part that
 * only reads state can take the narrower interface, one that only keeps the ledger its `bookkeeping`.
 */

/** The warehouse's schema and the destination's life. */
export interface DestinationSchema {
  /** What this destination does beyond the contract's least (see DestinationCapabilities). */
  readonly capabilities: DestinationCapabilities;
  /**
   * Creates schema/dataset, all tables and indexes; idempotent; adds columns missing from existing tables;
   * then the views, `ticket_custom_fields` included (connectors/custom-field-view.ts).
   */
  prepare(): Promise<void>;
  /**
   * Proves, after prepare(), that the warehouse takes writes the way a run makes them, leaving nothing a
   * run would see (PostgreSQL: a table created and written in a transaction rolled back; BigQuery: a Storage
   * Write API append of a merged marker for a batch that never existed, and a DML job that changes no row).
   * Fails within seconds with a message naming what does not answer or is refused. `not_prepared`: the
   * tables a run writes do not exist yet (the first run's prepare() creates them), so nothing was probed.
   */
  probeWrite(): Promise<'probed' | 'not_prepared'>;
  /**
   * Creates or replaces one view (a view whose columns change is dropped and created again): how a view
   * whose columns follow the data is regenerated (connectors/custom-field-view.ts).
   */
  replaceView(view: ViewSpec): Promise<void>;
  close(): Promise<void>;
}

/** Rows and checkpoints in, each call atomic. */
export interface WarehouseWrites {
  /**
   * Batches of one or several tables (a page and what it says about its rows, a report snapshot and its
   * flattened values), every batch's checkpoints and `checkpoint`, all in one transaction (or one staged
   * append); an invalid row rejects everything. Checkpoints alone (no batch: a window restarted, a
   * high-water mark moved) are written atomically as a page's are — durable and read back at once.
   *
   * Without `staging`, merged on return: one result per batch, in order. With it (the page path), durable
   * on return, a checkpoint never without the rows it follows, but the rows may reach their tables only at
   * the next `flushStaged` (StagedWrite). Re-staging a batch (a retried page) is harmless: the merge keeps
   * the latest version.
   */
  writeTables(
    batches: readonly WriteBatch[],
    checkpoint?: CheckpointUpdate | readonly CheckpointUpdate[],
  ): Promise<WriteResult[]>;
  writeTables(
    batches: readonly WriteBatch[],
    checkpoint: CheckpointUpdate | readonly CheckpointUpdate[] | undefined,
    staging: StagedWrite,
  ): Promise<StageReport>;
  /**
   * The table spec this destination writes `table` with (the column policy applied): what a row read again
   * from the source must go through to compare with the stored one (the audit), hashed and dropped fields
   * alike, and what gives an input the `_content_hash` it is stored with (contentHashOf, schemas/warehouse:
   * a writer compares like with like against `storedVersions`; tickets: a content-only change).
   */
  writtenSpec(table: TableName): TableSpec<unknown>;
  /**
   * Merges every staged batch into its tables (whichever process staged it), one writer per table at a
   * time in this process; idempotent. A window flushes before it records itself succeeded.
   */
  flushStaged(): Promise<void>;
  /**
   * The clock that stamps `_synced_at`: the warehouse's own (PostgreSQL `now()`, BigQuery
   * `CURRENT_TIMESTAMP()`) unless a test clock was injected. One clock for every worker, so a full refresh
   * can mark "not received since the run began" exactly, whatever the workers' clocks say.
   */
  currentTime(): Promise<Date>;
}

/** Rows marked deleted, never removed. */
export interface WarehouseDeletions {
  /**
   * Marks deleted (`deletedAt`, only rows not yet deleted) the rows `mark` selects, with its checkpoint in
   * the same transaction; returns how many were marked. A cascade also revives (see DeletionCascade) and
   * returns how many rows changed each way.
   */
  markDeleted(mark: RowsDeletion, deletedAt: Date): Promise<number>;
  markDeleted(mark: CascadeDeletion, deletedAt: Date): Promise<DeletionCounts>;
}

/** What the warehouse holds and how far the sync got. */
export interface StateReads {
  /**
   * `lastSeenTag`: a tag of the scope's checkpoint as the caller last saw it (connectors/cursor-tag.ts: of
   * its cursor, as a page reported it, or of the whole checkpoint, as a listing returned it). A destination
   * that holds the checkpoints it wrote or listed may answer from memory when the one it holds bears that
   * tag — one process's page after page, or a listing's entries, cost no read — and reads otherwise (a
   * checkpoint another process wrote since is never mistaken for it). Only where the capabilities say
   * `remembersCheckpointTags`: a caller passes none to a destination without.
   */
  readCheckpoint(
    stream: string,
    scope: string,
    options?: { readonly lastSeenTag?: string | undefined },
  ): Promise<Checkpoint | null>;
  /** The checkpoints `filter` selects: every one but the thread queue's by default (see CheckpointFilter). */
  listCheckpoints(filter?: CheckpointFilter): Promise<Checkpoint[]>;
  /**
   * id → what is stored: the version (canonical ISO string, see canonicalTimestamp; null for content-rule
   * tables) and `_content_hash` (null on rows written before hashes). Rows marked deleted are left out: a
   * row that comes back counts as new.
   */
  storedVersions(
    table: TableName,
    ids: readonly string[],
    /** The run asking (RunScope). */
    options?: RunScope,
  ): Promise<Map<string, StoredVersion>>;
  /**
   * The live rows of `table` (those `filter` selects, or all), only `columns`, in no order; `_synced_at` is
   * when each was last seen in the source. BigQuery reads a small table without a query (a query bills 10 MB
   * at least, whatever it reads).
   */
  liveRows(
    table: TableName,
    columns: readonly string[],
    filter?: RowFilter,
  ): Promise<Record<string, unknown>[]>;
  /**
   * Runs one read-only SELECT written against the shared SQL dialect (schemas/warehouse-views.ts) — how
   * code outside the connectors computes a number from the warehouse without knowing which one it is.
   * Rows come back normalized: timestamps canonical strings, integers as numbers.
   */
  select(build: (dialect: SqlDialect) => string): Promise<Record<string, unknown>[]>;
}

/** The runs and their reconciliation results. */
export interface RunLedger {
  /** Upserts a run record by run_id. */
  recordRun(run: SyncRunRecord): Promise<void>;
  /** Most recent runs first (by started_at). */
  listRuns(limit: number): Promise<SyncRunRecord[]>;
  /** Whether a sync ever prepared this warehouse (its ledger table exists); reads only, no DDL. */
  hasLedger(): Promise<boolean>;
  /** Upserts reconciliation results by (run_id, metric, period). */
  recordReconciliation(rows: readonly ReconciliationRecord[]): Promise<void>;
  /** The reconciliation rows of one run, or of the latest run that has any (by checked_at). */
  listReconciliation(runId?: string): Promise<ReconciliationRecord[]>;
}

/** The field-level audit: its sample of a table and its results (`_audit`). */
export interface AuditLedger {
  /**
   * Up to `limit` live rows of `table` in an order fixed by a hash of each row's id and `seed` (the run id):
   * the audit's random sample, the same on every warehouse. Each with its `seedColumn` (a ticket number or a
   * date: where the audit starts reading it).
   */
  auditSample(table: TableName, seedColumn: string, seed: string, limit: number): Promise<AuditSeed[]>;
  /** Upserts audit results by (run_id, table_name, row_id). */
  recordAudit(rows: readonly AuditRecord[]): Promise<void>;
  /** Counts of `_audit` rows per table by verdict: of one run, or of every run since an instant. */
  auditCounts(
    filter: { readonly runId: string } | { readonly since: Date },
  ): Promise<Record<string, AuditCounts>>;
}

/**
 * The bookkeeping tables' own writes and reads, beside the data: the run ledger and reconciliation
 * (`_sync_runs`, `_reconciliation`), the audit (`_audit`), items set aside (`_rejected`) and schema drift
 * (`_schema_changes`), and the thread queue's reads (`_thread_queue` with the tickets: stale threads,
 * freshness). A part of its own, composed into each destination (sql/bookkeeping.ts, and BigQuery's
 * table reads over it, bigquery/bookkeeping.ts), so the core does not grow a member per bookkeeping table.
 */
export interface Bookkeeping extends RunLedger, AuditLedger {
  /**
   * The open items of `_rejected`, counted per table, stream and scope: the threads and export windows to
   * read again, and what a run reports as missing. Items staged and not merged yet may be left out (they
   * count from the next flush on).
   */
  openRejections(): Promise<OpenRejections[]>;
  /** Schema changes (`_schema_changes`), the newest first seen first. */
  listSchemaChanges(filter?: SchemaChangeFilter): Promise<SchemaChangeRecord[]>;
  /**
   * Ticket numbers (thread-queue scopes) of live tickets whose thread was last read completely before
   * `verifiedBefore`, oldest read first: the rolling thread re-read takes them.
   */
  staleThreads(verifiedBefore: Date, limit: number): Promise<string[]>;
  /** How current tickets and threads are known to be (for `status`). */
  freshness(): Promise<Freshness>;
}

export interface Destination extends DestinationSchema, WarehouseWrites, WarehouseDeletions, StateReads {
  /** The bookkeeping tables (see Bookkeeping). */
  readonly bookkeeping: Bookkeeping;
}

/** Options shared by every destination. */
export interface DestinationOptions {
  /**
   * Test clock for `_synced_at` and checkpoint `updated_at`. Default: `_synced_at` from the warehouse's
   * clock, `updated_at` from the system clock.
   */
  readonly clock?: () => Date;
  readonly hooks?: DestinationHooks;
  /**
   * Table specs used instead of the model's, by table name (tests: an older version of a spec, to write
   * rows as an older sync did and then migrate them). Default: schemas/warehouse.ts.
   */
  readonly tables?: TableSpecOverrides;
  /**
   * The column policy (SYNC_COLUMN_POLICY) with its key: every row and every item set aside passes it before
   * it is written (schemas/warehouse/redactor.ts). Default: none.
   */
  readonly redactor?: Redactor;
  /**
   * The workspace the destination writes and how the deployment stores workspaces (SYNC_WAREHOUSE_LAYOUT):
   * in shared tables every row, key, read and update is the workspace's own. Default: a schema of its own.
   */
  readonly scope?: WarehouseScope;
}

/** Replacement specs by table name (see DestinationOptions.tables). */
export type TableSpecOverrides = { readonly [T in TableName]?: TableSpec<RowInputs[T]> };

/** What a page's read or write tells `destination` of its run: only one that caches versions per run uses it. */
export function runScope(
  destination: Pick<DestinationSchema, 'capabilities'>,
  runId: string | null | undefined,
): RunScope {
  return destination.capabilities.cachesVersionsPerRun ? { runId: runId ?? null } : {};
}

/** readCheckpoint's `lastSeenTag`, for a destination that remembers checkpoint tags; none for another. */
export function lastSeen(
  destination: Pick<DestinationSchema, 'capabilities'>,
  tag: string | undefined,
): { readonly lastSeenTag?: string | undefined } | undefined {
  return destination.capabilities.remembersCheckpointTags ? { lastSeenTag: tag } : undefined;
}
