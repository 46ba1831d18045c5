import { threadKeyOf } from '../../schemas/state-key.js';
import type {
  Checkpoint,
  CheckpointUpdate,
  StoredVersion,
  TableName,
  TableSpec,
} from '../../schemas/warehouse.js';
import type { SqlDialect, ViewSpec } from '../../schemas/warehouse-views.js';
import { checkpointList } from '../batch.js';
import { refreshCustomFieldView } from '../custom-field-view.js';
import type {
  Bookkeeping,
  CascadeDeletion,
  CheckpointFilter,
  DeletionCounts,
  Destination,
  DestinationCapabilities,
  RowsDeletion,
  StagedWrite,
  StageReport,
  WriteBatch,
  WriteResult,
} from '../destination.js';
import { type RowFilter, rowFilterSql } from '../row-filter.js';
import type { DestinationSettings } from '../settings.js';
import { SqlBookkeeping } from './bookkeeping.js';
import {
  type CascadeConditions,
  cascadeConditions,
  type DeletionRequest,
  liveIdsWhere,
  notSeenSinceWhere,
} from './deletions.js';
import { parsedRows, type Row, type SqlSession, statement } from './dialect.js';
import { readCheckpointAt, readCheckpoints, readThreadQueue, storedVersions } from './state-reads.js';

/** The write path of one warehouse: rows, checkpoints and deletions, each atomic. */
export interface WarehouseWriter {
  /** Batches and checkpoints merged in one transaction (Destination.writeTables without staging). */
  writeTables(
    batches: readonly WriteBatch[],
    checkpoint?: CheckpointUpdate | readonly CheckpointUpdate[],
  ): Promise<WriteResult[]>;
  /**
   * A warehouse with a staging path of its own (capabilities `stagesWrites`): appends the batches and
   * checkpoints durably, merged by `flush`; how many rows it staged (with a run, those stored as they are
   * left out). Without it a staged write is written and merged at once.
   */
  stage?(
    batches: readonly WriteBatch[],
    checkpoints: readonly CheckpointUpdate[],
    runId: string | null,
  ): Promise<number>;
  /** Merges what `stage` appended (Destination.flushStaged). */
  flush?(): Promise<unknown>;
  /** Checkpoints alone, atomically (Destination.writeTables without a batch). */
  writeCheckpoints(checkpoints: readonly CheckpointUpdate[]): Promise<void>;
  /** Marks deleted the rows a request selects and upserts its checkpoint, in one transaction; how many. */
  markDeleted(request: DeletionRequest): Promise<number>;
  /** Applies a cascade's conditions to the child table in one transaction. */
  cascade(child: TableSpec<unknown>, conditions: CascadeConditions, deletedAt: Date): Promise<DeletionCounts>;
}

/** What one warehouse brings to a destination; everything else is written once, here. */
export interface WarehouseParts {
  readonly capabilities: DestinationCapabilities;
  /** The bookkeeping tables; default: the same statements on every warehouse (SqlBookkeeping). */
  readonly bookkeeping?: Bookkeeping;
  readonly settings: DestinationSettings;
  readonly session: SqlSession;
  /** The DDL: creates or migrates every table, then the views. */
  readonly prepare: () => Promise<void>;
  /** Creates or replaces one view (a view whose columns change is dropped and created again). */
  readonly createView: (view: ViewSpec) => Promise<void>;
  readonly writer: WarehouseWriter;
  /** Destination.probeWrite: the warehouse's own proof that a run can write. */
  readonly probeWrite: () => Promise<'probed' | 'not_prepared'>;
}

/**
 * A destination over a SQL warehouse: the warehouse brings its session, DDL and write path
 * (WarehouseParts); the reads of state and ledger, the ledger's upserts and the choice of rows a deletion
 * marks are the same SQL on every warehouse (sql/state-reads.ts, sql/ledger.ts, sql/deletions.ts).
 */
export class SqlDestination implements Destination {
  readonly capabilities: DestinationCapabilities;
  readonly bookkeeping: Bookkeeping;
  readonly #session: SqlSession;
  readonly #settings: DestinationSettings;
  readonly #writer: WarehouseWriter;
  readonly #prepare: () => Promise<void>;
  readonly #createView: (view: ViewSpec) => Promise<void>;
  readonly #probeWrite: () => Promise<'probed' | 'not_prepared'>;

  constructor(parts: WarehouseParts) {
    this.capabilities = parts.capabilities;
    this.bookkeeping = parts.bookkeeping ?? new SqlBookkeeping(parts.session, parts.settings);
    this.#probeWrite = parts.probeWrite;
    this.#session = parts.session;
    this.#settings = parts.settings;
    this.#writer = parts.writer;
    this.#prepare = parts.prepare;
    this.#createView = parts.createView;
  }

  // --- schema and writes: the warehouse's own -----------------------------------------------------------

  async prepare(): Promise<void> {
    await this.#prepare();
    await refreshCustomFieldView(this);
  }

  probeWrite(): Promise<'probed' | 'not_prepared'> {
    return this.#probeWrite();
  }

  replaceView(view: ViewSpec): Promise<void> {
    return this.#createView(view);
  }

  writeTables(
    batches: readonly WriteBatch[],
    checkpoint?: CheckpointUpdate | readonly CheckpointUpdate[],
  ): Promise<WriteResult[]>;
  writeTables(
    batches: readonly WriteBatch[],
    checkpoint: CheckpointUpdate | readonly CheckpointUpdate[] | undefined,
    staging: StagedWrite,
  ): Promise<StageReport>;
  async writeTables(
    batches: readonly WriteBatch[],
    checkpoint?: CheckpointUpdate | readonly CheckpointUpdate[],
    staging?: StagedWrite,
  ): Promise<WriteResult[] | StageReport> {
    if (staging && this.#writer.stage)
      return { rows: await this.#writer.stage(batches, checkpointList(checkpoint), staging.runId ?? null) };
    if (batches.length === 0) {
      await this.#writer.writeCheckpoints(checkpointList(checkpoint));
      return staging ? { rows: 0 } : [];
    }
    const results = await this.#writer.writeTables(batches, checkpoint);
    // Without a staging path of its own a staged write is merged at once, every row of it (a comparison
    // with what is stored would cost PostgreSQL more than the write).
    return staging ? { rows: results.reduce((sum, r) => sum + r.received, 0) } : results;
  }

  writtenSpec(table: TableName): TableSpec<unknown> {
    return this.#settings.spec(table);
  }

  /** Merges what the warehouse's staging path appended; nothing is ever left staged without one. */
  async flushStaged(): Promise<void> {
    await this.#writer.flush?.();
  }

  async currentTime(): Promise<Date> {
    if (!this.#settings.serverClock) return this.#settings.clock();
    const d = this.#session.dialect;
    const now = statement(d, () => `SELECT ${d.now} AS t`);
    const [t] = await parsedRows(this.#session, 'currentTime', now, (row) => new Date(String(row['t'])));
    return t!;
  }

  close(): Promise<void> {
    return this.#session.close();
  }

  // --- deletions: which rows, written once; how they are marked, the warehouse's ------------------------

  markDeleted(mark: RowsDeletion, deletedAt: Date): Promise<number>;
  markDeleted(mark: CascadeDeletion, deletedAt: Date): Promise<DeletionCounts>;
  async markDeleted(mark: RowsDeletion | CascadeDeletion, deletedAt: Date): Promise<number | DeletionCounts> {
    if ('cascade' in mark) {
      const child = this.#settings.deletable(mark.cascade.child);
      const parent = this.#settings.deletable(mark.cascade.parent);
      const conditions = cascadeConditions(this.#session.dialect, child, parent, mark.cascade);
      return this.#writer.cascade(child, conditions, deletedAt);
    }
    const spec = this.#settings.deletable(mark.table);
    const { checkpoint } = mark;
    if ('ids' in mark) {
      // Nothing to mark and no checkpoint to move: no transaction to open.
      if (mark.ids.length === 0 && checkpoint === undefined) return 0;
      const where = liveIdsWhere(spec, mark.ids);
      const candidates = { kind: 'ids', ids: mark.ids } as const;
      return this.#writer.markDeleted({
        spec,
        where,
        candidates,
        deletedAt,
        checkpoint,
        operation: 'markDeleted',
      });
    }
    const { notSeenSince: since, within, unlessUnread } = mark;
    const where = notSeenSinceWhere(spec, since, within, unlessUnread);
    const operation = 'markDeletedNotSeenSince';
    const candidates = { kind: 'not_seen_since', since, ...(within ? { within } : {}) } as const;
    return this.#writer.markDeleted({ spec, where, candidates, deletedAt, checkpoint, operation });
  }

  // --- reads of state and ledger: one SQL for every warehouse ----------------------------------------------

  async readCheckpoint(
    ...[stream, scope]: Parameters<Destination['readCheckpoint']>
  ): Promise<Checkpoint | null> {
    return readCheckpointAt(this.#session, 'readCheckpoint', { stream, scope });
  }

  async listCheckpoints({ threadQueue, scopes, ...filter }: CheckpointFilter = {}): Promise<Checkpoint[]> {
    if (scopes === undefined)
      return threadQueue
        ? readThreadQueue(this.#session, 'listThreadQueue', filter)
        : readCheckpoints(this.#session, 'listCheckpoints', filter);
    if (scopes.length === 0) return [];
    // The scopes' key range read by the index, then only the scopes asked for (a batch's threads are
    // listed together, so the range holds little else).
    const { limit, ...where } = filter;
    const numbers = threadQueue ? scopes.map((scope) => threadKeyOf(scope).ticketNumber) : [];
    const listed = threadQueue
      ? await readThreadQueue(this.#session, 'listThreadQueue', {
          ...where,
          ticketNumbers: { from: Math.min(...numbers), to: Math.max(...numbers) },
        })
      : await readCheckpoints(this.#session, 'listCheckpoints', where);
    const wanted = new Set(scopes);
    return listed.filter((cp) => wanted.has(cp.scope)).slice(0, limit);
  }

  async storedVersions(table: TableName, ids: readonly string[]): Promise<Map<string, StoredVersion>> {
    return storedVersions(this.#session, this.#settings.spec(table), ids);
  }

  async select(build: (dialect: SqlDialect) => string): Promise<Row[]> {
    const d = this.#session.dialect;
    return parsedRows(
      this.#session,
      'select',
      statement(d, () => build(d)),
      (row) => row,
    );
  }

  async liveRows(
    table: TableName,
    columns: readonly string[],
    filter?: RowFilter,
  ): Promise<Record<string, unknown>[]> {
    const spec = this.#settings.spec(table);
    return this.select((d) => {
      const where = [
        ...(spec.tracksDeletion ? [`t.${d.ident('_deleted_at')} IS NULL`] : []),
        ...(filter ? [`(${rowFilterSql(d, filter)})`] : []),
      ];
      return `SELECT ${columns.map((c) => `t.${d.ident(c)}`).join(', ')} FROM ${d.table(table)} t${
        where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''
      }`;
    });
  }
}
