import type { CheckpointUpdate, TableName, TableSpec, WarehouseRow } from '../../schemas/warehouse.js';
import { batchRows, checkpointList, writeResult } from '../batch.js';
import type { Destination, WriteBatch, WriteResult } from '../destination.js';
import type { DestinationSettings } from '../settings.js';
import type { CascadeConditions, CascadeCounts, DeletionRequest } from '../sql/deletions.js';
import type { WarehouseWriter } from '../sql/destination.js';
import { bindLiteral, timestampLiteral } from './dialect.js';
import { dropStage, stageName, stageRows } from './load.js';
import type { BigQuerySession } from './session.js';
import { checkpointMergeSql, mergeScript, multiMergeScript, rowlessScript, type SyncedAt } from './sql.js';

/** A batch whose rows are loaded into a staging table of their own. */
interface StagedBatch {
  readonly batch: WriteBatch;
  readonly spec: TableSpec<unknown>;
  readonly rows: WarehouseRow[];
  readonly stage: string;
}

/**
 * BigQuery's write path. A batch is validated and de-duplicated, loaded into a staging table of its own
 * (load.ts), then one multi-statement transaction MERGEs it into the target with the version rule and
 * MERGEs the checkpoint into `_sync_state` (sql.ts); the staging table is dropped afterwards. Scripts
 * BigQuery aborts for a concurrent update of the same table are retried (session.ts).
 */
export class BigQueryWriter implements WarehouseWriter {
  constructor(
    private readonly session: BigQuerySession,
    private readonly settings: DestinationSettings,
  ) {}

  async writeBatch<T extends TableName>(batch: WriteBatch<T>): Promise<WriteResult> {
    const context = `writeBatch ${batch.table}`;
    const spec = this.settings.spec(batch.table);
    const rows = batchRows(spec, batch);
    const rejected = this.settings.rejectedItems(batch.rejected);
    const schemaChanges = this.settings.schemaChanges([batch]);
    const syncedAt = this.#syncedAt();
    const checkpoints = checkpointList(batch.checkpoint);
    const seen = batch.seen ?? [];
    if (rows.length === 0) {
      if (seen.length > 0 || rejected.length > 0 || schemaChanges.length > 0) {
        const script = rowlessScript(
          this.session.dataset,
          { spec, ids: seen },
          rejected,
          syncedAt,
          checkpoints,
          schemaChanges,
        );
        await this.session.withErrorMapping(context, () => this.session.script(script));
      } else {
        await this.#checkpointOnly(checkpoints, syncedAt.checkpointTime);
      }
      return writeResult(batch, 0, 0);
    }
    const staged = { batch, spec, rows, stage: stageName(spec) };
    const [counts] = await this.#mergeStaged(context, [staged], () =>
      mergeScript(
        this.session.dataset,
        spec,
        staged.stage,
        syncedAt,
        checkpoints,
        seen,
        rejected,
        batch.repair === true,
        schemaChanges,
      ),
    );
    return writeResult(batch, counts?.['inserted'], counts?.['updated']);
  }

  async writeTables(
    ...[batches, checkpoint]: Parameters<Destination['writeTables']>
  ): Promise<WriteResult[]> {
    const context = `writeTables ${batches.map((b) => b.table).join(', ')}`;
    const prepared = batches.map((batch) => {
      const spec = this.settings.spec(batch.table);
      return { batch, spec, rows: batchRows(spec, batch) };
    });
    const rejected = this.settings.rejectedItems(batches.flatMap((b) => b.rejected ?? []));
    const schemaChanges = this.settings.schemaChanges(batches);
    const syncedAt = this.#syncedAt();
    const checkpoints = checkpointList(checkpoint);
    const loaded = prepared.filter((p) => p.rows.length > 0);
    if (loaded.length === 0) {
      if (rejected.length > 0 || schemaChanges.length > 0) {
        const script = rowlessScript(
          this.session.dataset,
          null,
          rejected,
          syncedAt,
          checkpoints,
          schemaChanges,
        );
        await this.session.withErrorMapping(context, () => this.session.script(script));
      } else await this.#checkpointOnly(checkpoints, syncedAt.checkpointTime);
      return prepared.map((p) => writeResult(p.batch, 0, 0));
    }
    const stages = loaded.map((p) => ({ ...p, stage: stageName(p.spec) }));
    const [counts] = await this.#mergeStaged(context, stages, () =>
      multiMergeScript(this.session.dataset, stages, syncedAt, checkpoints, rejected, schemaChanges),
    );
    return prepared.map((p) => {
      const i = stages.findIndex((s) => s.batch === p.batch);
      return i < 0
        ? writeResult(p.batch, 0, 0)
        : writeResult(p.batch, counts?.[`inserted_${i}`], counts?.[`updated_${i}`]);
    });
  }

  /**
   * Loads each batch into its staging table (the `beforeMerge` hook after each), then runs the merge
   * script; the staging tables are dropped whatever happened. Returns the script's last rows (its counts).
   */
  async #mergeStaged(
    context: string,
    stages: readonly StagedBatch[],
    script: () => string,
  ): Promise<Record<string, unknown>[]> {
    try {
      return await this.session.withErrorMapping(context, async () => {
        for (const s of stages) {
          await stageRows(this.session, s.spec, s.stage, s.rows);
          await this.settings.hooks.beforeMerge?.(s.batch.table);
        }
        return this.session.script(script());
      });
    } finally {
      for (const s of stages) await dropStage(this.session, s.stage);
    }
  }

  async writeCheckpoints(checkpoints: readonly CheckpointUpdate[]): Promise<void> {
    await this.#checkpointOnly(checkpointList(checkpoints), this.settings.clock());
  }

  /** How this write stamps `_synced_at`: BigQuery's clock, or the injected test clock as a literal. */
  #syncedAt(): SyncedAt {
    const at = this.settings.clock();
    return {
      sql: this.settings.serverClock ? 'CURRENT_TIMESTAMP()' : timestampLiteral(at),
      checkpointTime: at,
    };
  }

  async #checkpointOnly(list: readonly CheckpointUpdate[], at: Date): Promise<void> {
    if (list.length === 0) return;
    const merge = checkpointMergeSql(this.session.dataset, list, at);
    await this.session.withErrorMapping('checkpoint', () => this.session.script(merge));
  }

  // --- deletions: the rows come from sql/deletions.ts; here, the script that counts and marks them ------

  /**
   * The count is taken inside the transaction, on the snapshot the UPDATE works on. `where` names the table
   * `t` (a guard's subquery must not mistake its own columns for the table's). Both deletions have always
   * been named `markDeleted` in BigQuery's errors: one script serves them.
   */
  async markDeleted({ spec, where, deletedAt, checkpoint }: DeletionRequest): Promise<number> {
    const d = this.session.dialect;
    const target = d.table(spec.name);
    const condition = where(d, bindLiteral);
    const checkpoints = checkpointList(checkpoint);
    const script = `DECLARE n INT64 DEFAULT 0;
BEGIN TRANSACTION;
SET n = (SELECT COUNT(*) FROM ${target} t WHERE ${condition});
UPDATE ${target} t SET _deleted_at = ${timestampLiteral(deletedAt)} WHERE ${condition};
${checkpoints.length > 0 ? `${checkpointMergeSql(this.session.dataset, checkpoints, this.settings.clock())};\n` : ''}COMMIT TRANSACTION;
SELECT n;`;
    const [row] = await this.session.withErrorMapping(`markDeleted ${spec.name}`, () =>
      this.session.script<{ n: number }>(script),
    );
    return Number(row?.n ?? 0);
  }

  async cascade(
    child: TableSpec<unknown>,
    conditions: CascadeConditions,
    deletedAt: Date,
  ): Promise<CascadeCounts> {
    const target = this.session.dialect.table(child.name);
    const revive = conditions.revive
      ? `SET revived = (SELECT COUNT(*) FROM ${target} WHERE ${conditions.revive});
UPDATE ${target} SET _deleted_at = CAST(NULL AS TIMESTAMP) WHERE ${conditions.revive};
`
      : '';
    const script = `DECLARE marked INT64 DEFAULT 0;
DECLARE revived INT64 DEFAULT 0;
BEGIN TRANSACTION;
SET marked = (SELECT COUNT(*) FROM ${target} WHERE ${conditions.mark});
UPDATE ${target} SET _deleted_at = ${timestampLiteral(deletedAt)} WHERE ${conditions.mark};
${revive}COMMIT TRANSACTION;
SELECT marked, revived;`;
    const [row] = await this.session.withErrorMapping(`cascadeDeletion ${child.name}`, () =>
      this.session.script<{ marked: number; revived: number }>(script),
    );
    return { marked: Number(row?.marked ?? 0), revived: Number(row?.revived ?? 0) };
  }
}
