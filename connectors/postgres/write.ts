import { createHash } from 'node:crypto';
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
import { DestinationError } from '../errors.js';
import type { DestinationSettings } from '../settings.js';
import type { CascadeConditions, DeletionRequest } from '../sql/deletions.js';
import type { WarehouseWriter } from '../sql/destination.js';
import { statement, type WarehouseDialect } from '../sql/dialect.js';
import { schemaChangesSql } from '../sql/schema-changes.js';
import { byStateTable, CHECKPOINT_BODY } from '../state-tables.js';
import { copyChunks } from './copy.js';
import { ident, PG_TYPES } from './dialect.js';
import type { PostgresSession } from './session.js';
import { mergeSql, rejectedUpsertSql, resolveRejectedSql, seenSql } from './sql.js';

/** A checkpoint upsert's second half: a known key takes every new value. */
const checkpointUpdate = (incoming: string) =>
  Object.fromEntries(CHECKPOINT_BODY.map((c) => [c, `${incoming}.${ident(c)}`]));

/**
 * The temporary staging table of a table's batch: one per connection and staged column list (named by a
 * hash of the list, so a spec whose columns change stages into a table of its own), created by the first
 * write on the connection that needs it and kept, emptied at every commit (ON COMMIT DELETE ROWS). A table
 * created and dropped by every commit cost PostgreSQL its catalog rows, files and cache invalidations, and
 * the commit a statement.
 */
interface Stage {
  readonly name: string;
  readonly create: string;
  readonly copy: string;
  /** The merge's text (mergeSql), by repair: made once per table, not per commit. */
  readonly merge: readonly [string, string];
}

function stageOf(d: WarehouseDialect, spec: TableSpec<unknown>): Stage {
  const cols = stagedColumns(spec);
  const shape = cols.map((c) => `${ident(c.name)} ${PG_TYPES[c.type]}`).join(', ');
  const name = `_stage_${spec.name}_${createHash('sha256').update(shape).digest('hex').slice(0, 12)}`;
  const checksRejected = spec.primaryKey.length === 1;
  return {
    name,
    create: `CREATE TEMP TABLE IF NOT EXISTS ${ident(name)} (${shape}) ON COMMIT DELETE ROWS`,
    copy: `COPY ${ident(name)} (${cols.map((c) => ident(c.name)).join(', ')}) FROM STDIN (FORMAT text)`,
    merge: [mergeSql(d, spec, name, false, checksRejected), mergeSql(d, spec, name, true, checksRejected)],
  };
}

/** The staging tables each connection holds (those created by a transaction that committed). */
const stagedOn = new WeakMap<pg.PoolClient, Set<string>>();

/**
 * PostgreSQL's write path. A batch is validated, de-duplicated by primary key and sorted, COPY'd (text
 * format, pg-copy-streams) into the connection's temporary staging table (emptied at commit), then merged
 * with `INSERT … SELECT … ON CONFLICT DO UPDATE WHERE <incoming wins>`; the checkpoint is upserted in the same
 * transaction. Merges into one table are serialized by a transaction-scoped advisory lock taken after
 * staging, so concurrent writers neither deadlock nor lose updates, and staging still runs in parallel.
 */
export class PostgresWriter implements WarehouseWriter {
  /** Each table's staging table and merge, by the spec it is written with. */
  readonly #stages = new WeakMap<TableSpec<unknown>, Stage>();

  constructor(
    private readonly session: PostgresSession,
    private readonly settings: DestinationSettings,
  ) {}

  #stage(spec: TableSpec<unknown>): Stage {
    let stage = this.#stages.get(spec);
    if (!stage) {
      stage = stageOf(this.session.dialect, spec);
      this.#stages.set(spec, stage);
    }
    return stage;
  }

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
    // One staging table per table and transaction: a second batch of a table would stage into the first's.
    for (let k = 1; k < order.length; k++)
      if (order[k]!.p.spec.name === order[k - 1]!.p.spec.name)
        throw new DestinationError(`one write holds two batches of ${order[k]!.p.spec.name}`);
    let connection: pg.PoolClient | undefined;
    const created: string[] = [];
    const results = await this.session.transaction(
      context,
      async (client, opened) => {
        connection = client;
        const syncedAt = this.settings.serverClock ? (opened[0]!['t'] as Date) : this.settings.clock();
        const results: WriteResult[] = new Array(prepared.length);
        const toResolve: TableSpec<unknown>[] = [];
        for (const { p, i } of order) {
          const { batch, spec, rows } = p;
          const merged =
            rows.length > 0 ? await this.#merge(client, batch, spec, rows, syncedAt, created) : null;
          if (merged?.openRejected) toResolve.push(spec);
          if (batch.seen && batch.seen.length > 0) {
            if (rows.length === 0) await this.session.lockTable(client, spec.name);
            await client.query(seenSql(this.session.dialect, spec), [syncedAt, batch.seen]);
          }
          results[i] = writeResult(batch, merged?.inserted, merged?.updated);
        }
        await this.#writeRejected(client, toResolve, rejected, syncedAt);
        await this.#writeSchemaChanges(client, schemaChanges, syncedAt);
        await this.#upsertCheckpoints(client, checkpointList(checkpoint), syncedAt);
        return results;
      },
      // `_synced_at` of the transaction: the server's transaction time, read with the BEGIN.
      this.settings.serverClock ? 'SELECT now() AS t' : undefined,
    );
    // Committed: the staging tables it created stay on its connection (a rollback took them away).
    if (connection && created.length > 0) {
      const known = stagedOn.get(connection) ?? new Set<string>();
      for (const name of created) known.add(name);
      stagedOn.set(connection, known);
    }
    return results;
  }

  /**
   * Stages the rows (COPY into the connection's staging table), then merges them under the table's lock;
   * the rows received unchanged are stamped, and whether `_rejected` holds an open entry of a staged item
   * is read, in the merge's statement.
   */
  async #merge(
    client: pg.PoolClient,
    batch: WriteBatch,
    spec: TableSpec<unknown>,
    rows: readonly Record<string, unknown>[],
    syncedAt: Date,
    created: string[],
  ): Promise<{ inserted: number; updated: number; openRejected: boolean }> {
    const stage = this.#stage(spec);
    if (!stagedOn.get(client)?.has(stage.name)) {
      await client.query(stage.create);
      created.push(stage.name);
    }
    const copy = client.query(copyFrom(stage.copy));
    await pipeline(Readable.from(copyChunks(stagedColumns(spec), rows)), copy);
    await this.settings.hooks.beforeMerge?.(batch.table);
    await this.session.lockTable(client, spec.name);
    const merged = await client.query<{ inserted: number; updated: number; open?: boolean }>(
      stage.merge[batch.repair === true ? 1 : 0],
      spec.primaryKey.length === 1 ? [syncedAt, spec.name] : [syncedAt],
    );
    const r = merged.rows[0];
    return { inserted: r?.inserted ?? 0, updated: r?.updated ?? 0, openRejected: r?.open === true };
  }

  /**
   * The `_rejected` side of a write, in its transaction, after every table's merge: open entries of a table
   * whose item the batch stored (`toResolve`: the merge read that it has some) are resolved, then the
   * batch's own rejections are recorded (so an item a batch both stores and rejects stays open). `_rejected`
   * is locked — last, after the data tables, as every writer does — only when there is something to write,
   * so writers of batches without rejections never wait for each other here.
   */
  async #writeRejected(
    client: pg.PoolClient,
    toResolve: readonly TableSpec<unknown>[],
    rejected: readonly RejectedItem[],
    syncedAt: Date,
  ): Promise<void> {
    const d = this.session.dialect;
    if (toResolve.length === 0 && rejected.length === 0) return;
    await this.session.lockTable(client, '_rejected');
    for (const spec of toResolve)
      await client.query(resolveRejectedSql(d, spec, this.#stage(spec).name), [spec.name, syncedAt]);
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
