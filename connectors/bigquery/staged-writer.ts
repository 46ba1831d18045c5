import type { WarehouseRow } from '../../schemas/warehouse/table-spec.js';
import {
  AuditRecord,
  byText,
  type Checkpoint,
  type CheckpointUpdate,
  SyncRunRecord,
  type TableName,
  type TableSpec,
} from '../../schemas/warehouse.js';
import { batchRows, checkpointList, writeResult } from '../batch.js';
import { BoundedMap } from '../bounded-map.js';
import { bearsTag } from '../cursor-tag.js';
import type {
  CheckpointFilter,
  DeletionCounts,
  DestinationHooks,
  WriteBatch,
  WriteResult,
} from '../destination.js';
import type { DestinationSettings } from '../settings.js';
import type { CascadeConditions, DeletionRequest } from '../sql/deletions.js';
import type { WarehouseWriter } from '../sql/destination.js';
import { queuedTicketOf } from '../state-tables.js';
import { cascadeMayChange, deletionMayMark } from './deletion-precheck.js';
import { type FlushReport, type FoldRequest, StagedFlusher, WriteGate } from './flush.js';
import { staged } from './flush-sql.js';
import type { BigQuerySession } from './session.js';
import { FOLD_AFTER_MS, unfoldedSightingsOf } from './sightings.js';
import type { StagedEntry, StagingAppender } from './staging.js';
import { checkpointsByTableReads } from './state-reads.js';
import { DEFAULT_VERSION_CACHE_LIMITS, RunVersionCache, type VersionCacheLimits } from './version-cache.js';
import { BigQueryDeletions } from './write.js';

/** When staged rows are merged without waiting for the window's end (see docs/design/bigquery-write-path.md §5). */
export interface FlushThresholds {
  /** Rows staged by this process since its last flush. */
  readonly rows: number;
  /** Age of the oldest of them. */
  readonly ms: number;
}

export const DEFAULT_FLUSH_THRESHOLDS: FlushThresholds = { rows: 50_000, ms: 10 * 60 * 1000 };

/** The destination's hooks, and one only this write path has. */
export interface BigQueryHooks extends DestinationHooks {
  /** After a flush's merge, before its batches are recorded merged (a crash there must lose nothing). */
  beforeMarkMerged?: () => Promise<void> | void;
}

/** A checkpoint this process knows, with where it learnt it. */
interface KnownCheckpoint {
  readonly checkpoint: Checkpoint;
}

/**
 * BigQuery's write path: a page is staged (one Storage Write API append of its rows, the ids it saw, the
 * items it set aside and its checkpoints — no job), and merged by a flush (flush.ts) at the window's end,
 * at the thresholds, or before a read that needs merged rows. A call that reports what it wrote
 * (writeTables) stages and flushes at once. Deletions flush first, then run as scripts (write.ts).
 *
 * Checkpoints: a staged checkpoint is durable at once (a reader sees it over `_sync_state` until the flush
 * merges it; read by table reads, state-reads.ts). The checkpoints this process staged are kept in memory,
 * and a page reads its checkpoint from there when the workflow's last cursor tag says it is the one it
 * holds — so a scope read page after page by one worker costs no read per page, and a page another worker
 * wrote is never mistaken for the one held here.
 */
export class StagedBigQueryWriter implements WarehouseWriter {
  readonly #scripts: BigQueryDeletions;
  readonly #flusher: StagedFlusher;
  /** What the tables store, read once per run (version-cache.ts). */
  readonly versions: RunVersionCache;
  /** Bounded: one entry per scope would grow with the workspace (a scope per ticket thread). */
  readonly #known = new BoundedMap<string, KnownCheckpoint>(KNOWN_CHECKPOINTS_KEPT);
  /**
   * Batches (and their rows) this process appended that reads need merged, and how many of them a finished
   * flush had seen when it began: totals, not counters taken back by each flush — two flushes that share
   * work (flush.ts flushSince) must not take the same batches back twice.
   */
  #staged = { batches: 0, rows: 0 };
  #merged = { batches: 0, rows: 0 };
  #unflushedSince: number | null = null;

  constructor(
    private readonly session: BigQuerySession,
    private readonly settings: DestinationSettings,
    private readonly appender: StagingAppender,
    private readonly thresholds: FlushThresholds = DEFAULT_FLUSH_THRESHOLDS,
    versionCacheLimits: VersionCacheLimits = DEFAULT_VERSION_CACHE_LIMITS,
    hooks: BigQueryHooks = {},
    /** Whose turn it is to write (flush.ts WriteGate): this writer's own, or its shared tables'. */
    gate: WriteGate = new WriteGate(),
  ) {
    this.#scripts = new BigQueryDeletions(session, settings);
    this.#flusher = new StagedFlusher(
      session,
      settings,
      async (batches, at) => {
        await hooks.beforeMarkMerged?.();
        await appender.markMerged(batches, at);
      },
      () => this.#flushBegins(),
      (folded) => appender.markFolded(folded),
      FOLD_AFTER_MS,
      gate,
    );
    this.versions = new RunVersionCache(session, versionCacheLimits);
  }

  /**
   * Stages the batches (their entries, then their checkpoints) and flushes when a threshold is reached.
   * With a `runId` (the page path), rows the table stores as they are (the run's version cache,
   * version-cache.ts) are staged as seen ids instead. Returns the rows staged.
   */
  async stage(
    batches: readonly WriteBatch[],
    extra: readonly CheckpointUpdate[] = [],
    runId: string | null = null,
  ): Promise<number> {
    const cache = runId === null ? undefined : { versions: this.versions, runId };
    const entries: StagedEntry[] = [];
    const remembered: [TableSpec<unknown>, WarehouseRow[]][] = [];
    let rows = 0;
    for (const batch of batches) {
      const spec = this.settings.spec(batch.table);
      let valid = batchRows(spec, batch);
      const cached = cache && !batch.repair && RunVersionCache.serves(spec);
      if (cached) {
        // Rows stored as they are become seen ids: no merge, but `_synced_at` still says they were served
        // (a complete re-read's deletion check, markDeleted's notSeenSince, reads it).
        const same = await cache.versions.unchanged(cache.runId, spec, valid);
        for (const row of same) entries.push(staged.seen(spec.name, String(row[spec.primaryKey[0]!])));
        valid = valid.filter((row) => !same.has(row));
        remembered.push([spec, valid]);
      }
      rows += valid.length;
      for (const row of valid) entries.push(staged.row(spec, row, batch.repair === true));
      for (const id of batch.seen ?? []) entries.push(staged.seen(spec.name, id));
    }
    const rejected = this.settings.rejectedItems(batches.flatMap((b) => b.rejected ?? []));
    for (const item of rejected) entries.push(staged.rejected(item));
    for (const sighting of this.settings.schemaChanges(batches))
      entries.push(staged.json('schema_change', sighting));
    const at = this.settings.clock();
    const checkpoints = checkpointList([...batches.flatMap((b) => checkpointList(b.checkpoint)), ...extra]);
    for (const cp of checkpoints) entries.push(staged.checkpoint(cp, at));
    if (entries.length === 0) return 0;
    await this.#append(`stage ${batches.map((b) => b.table).join(', ')}`, entries, rows);
    this.#remember(checkpoints, at);
    if (cache) {
      for (const [spec, list] of remembered) await cache.versions.remember(cache.runId, spec, list);
      for (const item of rejected)
        if (item.itemId !== null) cache.versions.forgetIds(item.table as TableName, [item.itemId]);
    }
    if (
      this.#staged.rows - this.#merged.rows >= this.thresholds.rows ||
      Date.now() - (this.#unflushedSince ?? Date.now()) >= this.thresholds.ms
    )
      await this.flush();
    return rows;
  }

  /**
   * Appends, and counts the batch for the thresholds and for `flushOwn` — unless `readsNeedIt` is false:
   * entries only their own reader needs merged (the audit's verdicts: auditCounts flushes), so that the
   * reads of merged rows that follow (the audit's next unit) do not flush for them.
   */
  async #append(
    context: string,
    entries: readonly StagedEntry[],
    rows = 0,
    readsNeedIt = true,
  ): Promise<void> {
    await this.session.withErrorMapping(context, () => this.appender.append(entries));
    if (!readsNeedIt) return;
    this.#staged = { batches: this.#staged.batches + 1, rows: this.#staged.rows + rows };
    this.#unflushedSince ??= Date.now();
  }

  /** Merges everything staged (by any process); with `fold`, also folds those tables' sightings. */
  flush(options: { counts?: boolean; fold?: FoldRequest } = {}): Promise<FlushReport> {
    return this.session.withErrorMapping('flush', () => this.#flusher.flush(options));
  }

  /** A flush begins: it merges every batch appended so far; what it returns is called when it has. */
  #flushBegins(): () => void {
    const upTo = this.#staged;
    return () => {
      if (upTo.batches > this.#merged.batches) this.#merged = upTo;
      if (this.#merged.batches === this.#staged.batches) this.#unflushedSince = null;
    };
  }

  /** Flushes when this process has staged something not merged yet (before a read of the tables). */
  async flushOwn(): Promise<void> {
    if (this.#staged.batches > this.#merged.batches) await this.flush();
  }

  async writeTables(
    ...[batches, checkpoint]: Parameters<WarehouseWriter['writeTables']>
  ): Promise<WriteResult[]> {
    await this.stage(batches, checkpointList(checkpoint));
    const report = await this.flush({ counts: true });
    return batches.map((b) => {
      const t = report.tables[b.table];
      return writeResult(b, t?.inserted, t?.updated);
    });
  }

  /**
   * A ledger entry: staged, merged with the next flush (windows record themselves at their start and end,
   * many at once: one statement each on `_sync_runs` would break its DML limits). A run's own record
   * (no parent) is flushed at once, so the ledger is whole when a run starts and ends.
   */
  async recordRun(run: SyncRunRecord): Promise<void> {
    await this.#append('recordRun', [staged.json('run', SyncRunRecord.parse(run))]);
    if (run.parent_run_id === null) await this.flush();
  }

  /**
   * The audit's verdicts: staged, merged with the next flush (one `_audit` upsert for every unit since, not
   * one per unit); the audit's closing read flushes first.
   */
  async recordAudit(records: readonly AuditRecord[]): Promise<void> {
    if (records.length === 0) return;
    await this.#append(
      'recordAudit',
      records.map((r) => staged.json('audit', AuditRecord.parse(r))),
      0,
      false,
    );
  }

  /** Checkpoints alone: staged (durable at once), merged with the next flush. */
  async writeCheckpoints(checkpoints: readonly CheckpointUpdate[]): Promise<void> {
    await this.stage([], checkpoints);
  }

  async markDeleted(request: DeletionRequest): Promise<number> {
    // Rows of the table staged are merged first (a row received again is no candidate). The sightings (seen
    // ids) are not: the pre-check reads them from the manifests (sightings.ts), and a deletion that can mark
    // nothing and moves no checkpoint runs no job at all. Otherwise a flush folds the table's sightings into
    // `_synced_at`, then the script runs — no other flush of this process writes in between.
    const table = request.spec.name;
    const n = await this.#exclusiveAfterFlush('markDeleted', [table], async () => {
      if (request.checkpoint === undefined) {
        const may = await this.session.withErrorMapping(`markDeleted ${table}`, async () => {
          const sightings = await unfoldedSightingsOf(this.session, table);
          if (sightings === null) return null;
          return deletionMayMark(this.session, request.spec, request.candidates, sightings);
        });
        if (may === false) return 0;
      }
      await this.session.withErrorMapping('markDeleted', () => this.#flusher.flushFolding([table]));
      return this.#scripts.markDeleted(request);
    });
    if (n > 0) this.versions.forgetTable(table as TableName);
    if (request.checkpoint) this.#remember([request.checkpoint], this.settings.clock());
    return n;
  }

  cascade(
    child: TableSpec<unknown>,
    conditions: CascadeConditions,
    deletedAt: Date,
  ): Promise<DeletionCounts> {
    // Rows marked (or revived) here: the cache reads the table again.
    this.versions.forgetTable(child.name as TableName);
    // Only rows of the two tables matter to a cascade (their `_deleted_at` and keys), not the seen ids
    // staged meanwhile (threads read on while tickets finish): with none staged, no flush runs for it.
    const tables = [child.name, conditions.columns.parent];
    return this.#exclusiveAfterFlush('cascadeDeletion', tables, async () => {
      const mayChange = await this.session.withErrorMapping(`cascadeDeletion ${child.name}`, () =>
        cascadeMayChange(this.session, child, conditions),
      );
      if (mayChange === false) return { marked: 0, revived: 0 };
      return this.#scripts.cascade(child, conditions, deletedAt);
    }).finally(() => this.versions.forgetTable(child.name as TableName));
  }

  /**
   * `write` after a flush begun since this call (its own, or one another request queued first ran); with
   * `rowsOf`, only when rows of those tables are staged and not merged (else no flush).
   */
  #exclusiveAfterFlush<T>(
    context: string,
    rowsOf: readonly string[] | null,
    write: () => Promise<T>,
  ): Promise<T> {
    const asked = this.#flusher.ticket();
    return this.#flusher.exclusive(async () => {
      await this.session.withErrorMapping(context, async () => {
        if (rowsOf === null || (await this.#flusher.rowsPending(rowsOf)))
          await this.#flusher.flushSince(asked);
      });
      return write();
    });
  }

  // --- checkpoints: staged ones over `_sync_state` ------------------------------------------------------

  /**
   * The checkpoint of a scope: the one held in memory when it bears `lastSeenTag` (bearsTag: the cursor the
   * workflow last saw, or the entry as this process listed it and wrote none since), otherwise read.
   */
  async readCheckpoint(
    stream: string,
    scope: string,
    options: { lastSeenTag?: string | undefined } = {},
  ): Promise<Checkpoint | null> {
    const known = this.#known.get(keyOf(stream, scope));
    const tag = options.lastSeenTag;
    if (tag !== undefined && known !== undefined && bearsTag(known.checkpoint, tag)) return known.checkpoint;
    const [read] = await this.listCheckpoints({ stream, scope });
    return read ?? null;
  }

  /**
   * Checkpoints by table reads (state-reads.ts: no query job), filtered and ordered here as the SQL
   * destinations do: those of `_sync_state` and `_reread_queue` by stream, then scope (a given stream and
   * scope may name a thread key); with `threadQueue`, the thread queue's entries by ticket number.
   */
  async listCheckpoints(
    filter: Omit<CheckpointFilter, 'stream'> & {
      stream?: string | undefined;
      scope?: string | undefined;
    },
  ): Promise<Checkpoint[]> {
    const all = await this.session.withErrorMapping(
      filter.threadQueue ? 'listThreadQueue' : 'listCheckpoints',
      () => checkpointsByTableReads(this.session),
    );
    const exact = filter.stream !== undefined && filter.scope !== undefined;
    const scopes = filter.scopes === undefined ? undefined : new Set(filter.scopes);
    const list = all
      .map((cp) => ({ cp, ticketNumber: queuedTicketOf(cp) }))
      .filter(({ ticketNumber }) => exact || (ticketNumber !== null) === (filter.threadQueue ?? false))
      .filter(({ cp }) =>
        (['stream', 'scope', 'status'] as const).every((k) => filter[k] === undefined || cp[k] === filter[k]),
      )
      .filter(({ cp }) => scopes === undefined || scopes.has(cp.scope))
      .sort((a, b) =>
        a.ticketNumber !== null && b.ticketNumber !== null
          ? a.ticketNumber - b.ticketNumber
          : byText(a.cp.stream, b.cp.stream) || byText(a.cp.scope, b.cp.scope),
      )
      .slice(0, filter.limit ?? undefined)
      .map(({ cp }) => cp);
    for (const cp of list) this.#known.set(keyOf(cp.stream, cp.scope), { checkpoint: cp });
    return list;
  }

  #remember(checkpoints: readonly CheckpointUpdate[], at: Date): void {
    for (const cp of checkpoints)
      this.#known.set(keyOf(cp.stream, cp.scope), {
        checkpoint: { ...cp, updated_at: at.toISOString() },
      });
  }

  close(): void {
    this.appender.close();
  }
}

/**
 * Checkpoints held in memory: far more than the scopes a worker reads at once (thread lanes, export windows),
 * so a scope read page after page never misses; a miss only costs the query.
 */
const KNOWN_CHECKPOINTS_KEPT = 10_000;

const keyOf = (stream: string, scope: string) => `${stream}\u0000${scope}`;
