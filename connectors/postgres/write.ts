import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import {
  type CheckpointUpdate,
  type RejectedItem,
  rowKey,
  type SchemaChangeSighting,
  SYSTEM_TABLES,
  type TableSpec,
} from '../../schemas/warehouse.js';
import { batchRows, checkpointList, stagedColumns, writeResult } from '../batch.js';
import type { DeletionCounts, WriteBatch, WriteResult } from '../destination.js';
import type { DestinationSettings } from '../settings.js';
import type { CascadeConditions, DeletionRequest } from '../sql/deletions.js';
import type { WarehouseWriter } from '../sql/destination.js';
import { statement } from '../sql/dialect.js';
import { schemaChangesSql } from '../sql/schema-changes.js';
import { byStateTable, CHECKPOINT_BODY } from '../state-tables.js';
import { copyChunks } from './copy.js';
import { ident, PG_TYPES } from './dialect.js';
import type { PostgresSession } from './session.js';
import {
  hasOpenRejectedSql,
  mergeSql,
  rejectedUpsertSql,
  resolveRejectedSql,
  seenSql,
  touchSql,
} from './sql.js';

/** A checkpoint upsert's second half: a known key takes every new value. */
const checkpointUpdate = (incoming: string) =>
  Object.fromEntries(CHECKPOINT_BODY.map((c) => [c, `${incoming}.${ident(c)}`]));

/** The temporary staging table of a table's batch (dropped at commit). */
const stageOf = (spec: TableSpec<unknown>) => `_stage_${spec.name}`;

/**
 * PostgreSQL's write path. A batch is validated, de-duplicated by primary key and sorted, COPY'd (text
 * format, pg-copy-streams) into a temporary staging table created for the transaction, then merged with
 * `INSERT … SELECT … ON CONFLICT DO UPDATE WHERE <incoming wins>`; the checkpoint is upserted in the same
 * transaction. Merges into one table are serialized by a transaction-scoped advisory lock taken after
 * staging, so concurrent writers neither deadlock nor lose updates, and staging still runs in parallel.
 */
export class PostgresWriter implements WarehouseWriter {
  constructor(
    private readonly session: PostgresSession,
    private readonly settings: DestinationSettings,
  ) {}

  writeTables(...[batches, checkpoint]: Parameters<WarehouseWriter['writeTables']>): Promise<WriteResult[]> {
    const checkpoints = [
      ...batches.flatMap((b) => checkpointList(b.checkpoint)),
      ...checkpointList(checkpoint),
    ];
    return this.#write(`writeTables ${batches.map((b) => b.table).join(', ')}`, batches, checkpoints);
  }

  async writeCheckpoints(checkpoints: readonly CheckpointUpdate[]): Promise<void> {
    const list = checkpointList(checkpoints);
    if (list.length === 0) return;
    await this.session.transaction('writeCheckpoints', (client) =>
      this.#upsertCheckpoints(client, list, this.settings.clock()),
    );
  }

  /** Validates every batch first, then merges them (tables locked in name order) and the checkpoints in one transaction. */
  async #write(
    context: string,
    batches: readonly WriteBatch[],
    checkpoint: WriteBatch['checkpoint'],
  ): Promise<WriteResult[]> {
    const prepared = batches.map((batch) => {
      const spec = this.settings.spec(batch.table);
      const rows = batchRows(spec, batch);
      rows.sort((a, b) => {
        const ka = rowKey(spec, a);
        const kb = rowKey(spec, b);
        return ka < kb ? -1 : ka > kb ? 1 : 0;
      });
      return { batch, spec, rows };
    });
    const rejected = this.settings.rejectedItems(batches.flatMap((b) => b.rejected ?? []));
    const schemaChanges = this.settings.schemaChanges(batches);
    const order = prepared
      .map((p, i) => ({ p, i }))
      .sort((a, b) => (a.p.spec.name < b.p.spec.name ? -1 : a.p.spec.name > b.p.spec.name ? 1 : 0));
    return this.session.transaction(context, async (client) => {
      const syncedAt = await this.#stamp(client);
      const results: WriteResult[] = new Array(prepared.length);
      for (const { p, i } of order) {
        const { batch, spec, rows } = p;
        const merged = rows.length > 0 ? await this.#merge(client, batch, spec, rows, syncedAt) : null;
        if (batch.seen && batch.seen.length > 0) {
          if (rows.length === 0) await this.session.lockTable(client, spec.name);
          await client.query(seenSql(this.session.dialect, spec), [syncedAt, batch.seen]);
        }
        results[i] = writeResult(batch, merged?.inserted, merged?.updated);
      }
      const stored = prepared.filter((p) => p.rows.length > 0).map((p) => p.spec);
      await this.#writeRejected(client, stored, rejected, syncedAt);
      await this.#writeSchemaChanges(client, schemaChanges, syncedAt);
      await this.#upsertCheckpoints(client, checkpointList(checkpoint), syncedAt);
      return results;
    });
  }

  /** Stages the rows (COPY into a temporary table), then merges them under the table's lock. */
  async #merge(
    client: pg.PoolClient,
    batch: WriteBatch,
    spec: TableSpec<unknown>,
    rows: readonly Record<string, unknown>[],
    syncedAt: Date,
  ): Promise<{ inserted: number; updated: number }> {
    const stage = stageOf(spec);
    const cols = stagedColumns(spec);
    await client.query(
      `CREATE TEMP TABLE ${ident(stage)} (${cols.map((c) => `${ident(c.name)} ${PG_TYPES[c.type]}`).join(', ')}) ON COMMIT DROP`,
    );
    const copy = client.query(
      copyFrom(
        `COPY ${ident(stage)} (${cols.map((c) => ident(c.name)).join(', ')}) FROM STDIN (FORMAT text)`,
      ),
    );
    await pipeline(Readable.from(copyChunks(cols, rows)), copy);
    await this.settings.hooks.beforeMerge?.(batch.table);
    await this.session.lockTable(client, spec.name);
    const d = this.session.dialect;
    const merged = await client.query<{ inserted: number; updated: number }>(
      mergeSql(d, spec, stage, batch.repair === true),
      [syncedAt],
    );
    await client.query(touchSql(d, spec, stage), [syncedAt]);
    return { inserted: merged.rows[0]?.inserted ?? 0, updated: merged.rows[0]?.updated ?? 0 };
  }

  /**
   * The `_rejected` side of a write, in its transaction, after every table's merge: open entries of a table
   * whose item the batch stored (its staging table) are resolved, then the batch's own rejections are
   * recorded (so an item a batch both stores and rejects stays open). `_rejected` is locked — last, after
   * the data tables, as every writer does — only when there is something to write, so writers of batches
   * without rejections never wait for each other here.
   */
  async #writeRejected(
    client: pg.PoolClient,
    stored: readonly TableSpec<unknown>[],
    rejected: readonly RejectedItem[],
    syncedAt: Date,
  ): Promise<void> {
    const d = this.session.dialect;
    const toResolve: TableSpec<unknown>[] = [];
    for (const spec of stored.filter((s) => s.primaryKey.length === 1)) {
      const r = await client.query<{ open: boolean }>(hasOpenRejectedSql(d, spec, stageOf(spec)), [
        spec.name,
      ]);
      if (r.rows[0]?.open) toResolve.push(spec);
    }
    if (toResolve.length === 0 && rejected.length === 0) return;
    await this.session.lockTable(client, '_rejected');
    for (const spec of toResolve)
      await client.query(resolveRejectedSql(d, spec, stageOf(spec)), [spec.name, syncedAt]);
    if (rejected.length === 0) return;
    const records = rejected.map((r) => ({
      table_name: r.table,
      item_key: r.itemKey,
      item_id: r.itemId,
      stream: r.stream,
      scope: r.scope,
      page_cursor: r.pageCursor,
      reason: r.reason,
      raw: r.raw,
    }));
    await client.query(rejectedUpsertSql(d), [syncedAt, JSON.stringify(records)]);
  }

  /**
   * The `_schema_changes` side of a write, after `_rejected`: the upsert of the sightings not yet recorded
   * for their run (and of the type changes of new fields they show). It reads before it locks (the NOT EXISTS of `pending`), so the pages of a run that saw
   * the same drift before take no row locks; the rows it does write are locked in key order.
   */
  async #writeSchemaChanges(
    client: pg.PoolClient,
    sightings: readonly SchemaChangeSighting[],
    syncedAt: Date,
  ): Promise<void> {
    if (sightings.length === 0) return;
    const d = this.session.dialect;
    // Type changes first: they compare with the type the stored new field had before this upsert.
    for (const part of ['typeChanges', 'upsert'] as const) {
      const write = statement(
        d,
        (bind) => schemaChangesSql(d, bind, sightings, bind(syncedAt, 'timestamp'))[part],
      );
      await client.query(
        write.sql,
        write.values.map((v) => v.value),
      );
    }
  }

  /** `_synced_at` of a transaction: the server's transaction time (never earlier than a prior currentTime()). */
  async #stamp(client: pg.PoolClient): Promise<Date> {
    if (!this.settings.serverClock) return this.settings.clock();
    const r = await client.query<{ t: Date }>('SELECT now() AS t');
    return r.rows[0]!.t;
  }

  /**
   * One statement per state table for any number of checkpoints (a tickets page queues up to a page of
   * threads), each into the table that holds its key (connectors/state-tables.ts).
   */
  async #upsertCheckpoints(
    client: pg.PoolClient,
    list: readonly CheckpointUpdate[],
    at: Date,
  ): Promise<void> {
    for (const { table, entries } of byStateTable(list)) {
      const spec = SYSTEM_TABLES[table.name];
      const typeOf = (name: string) => PG_TYPES[spec.columns.find((c) => c.name === name)!.type];
      const body = CHECKPOINT_BODY.filter((c) => c !== 'updated_at');
      const columns = [...table.keyColumns, ...body];
      const arrays = [
        ...table.keyColumns.map((_, i) => entries.map((e) => e.key[i])),
        ...body.map((c) => entries.map((e) => e.checkpoint[c])),
      ];
      const names = columns.map(ident).join(', ');
      const unnest = columns.map((c, i) => `$${i + 1}::${typeOf(c)}[]`).join(', ');
      const source = `SELECT ${columns.map((c) => `s.${ident(c)}`).join(', ')}, $${columns.length + 1}::timestamptz AS updated_at
         FROM unnest(${unnest}) AS s(${names})`;
      await client.query(
        this.session.dialect.mergeSource(
          table.name,
          table.keyColumns,
          [...columns, 'updated_at'],
          source,
          (incoming) => ({ set: checkpointUpdate(incoming), when: 'TRUE' }),
        ),
        [...arrays, at],
      );
    }
  }

  // --- deletions: the rows come from sql/deletions.ts; here, the lock and the transaction --------------

  markDeleted({ spec, where, deletedAt, checkpoint, operation }: DeletionRequest): Promise<number> {
    const d = this.session.dialect;
    const update = statement(
      d,
      (bind) =>
        `UPDATE ${d.target(spec.name)} AS t SET "_deleted_at" = ${bind(deletedAt, 'timestamp')} WHERE (${where(d, bind)})${d.ownRows('t')}`,
    );
    return this.session.transaction(`${operation} ${spec.name}`, async (client) => {
      await this.session.lockTable(client, spec.name);
      const r = await client.query(
        update.sql,
        update.values.map((v) => v.value),
      );
      if (checkpoint) await this.#upsertCheckpoints(client, [checkpoint], this.settings.clock());
      return r.rowCount ?? 0;
    });
  }

  cascade(
    child: TableSpec<unknown>,
    conditions: CascadeConditions,
    deletedAt: Date,
  ): Promise<DeletionCounts> {
    const d = this.session.dialect;
    const target = d.target(child.name);
    return this.session.transaction(`cascadeDeletion ${child.name}`, async (client) => {
      await this.session.lockTable(client, child.name);
      const marked = await client.query(
        `UPDATE ${target} SET "_deleted_at" = $1 WHERE (${conditions.mark})${d.ownRows()}`,
        [deletedAt],
      );
      const revived = conditions.revive
        ? await client.query(
            `UPDATE ${target} SET "_deleted_at" = NULL WHERE (${conditions.revive})${d.ownRows()}`,
          )
        : { rowCount: 0 };
      return { marked: marked.rowCount ?? 0, revived: revived.rowCount ?? 0 };
    });
  }
}
