import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { Secret } from '../../schemas/secret.js';
import {
  Checkpoint,
  type CheckpointUpdate,
  canonicalTimestamp,
  dedupeRows,
  Freshness,
  ReconciliationRecord,
  rowKey,
  type StoredVersion,
  SyncRunRecord,
  TABLE_NAMES,
  type TableName,
  type TableSpec,
  THREAD_QUEUE_STREAM,
  tableSpecOf,
  toValidatedRows,
  WarehouseRowError,
} from '../../schemas/warehouse.js';
import { type SqlDialect, WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import {
  type CheckpointFilter,
  cascadeColumn,
  checkpointList,
  type DeletionCascade,
  type DeletionRange,
  type Destination,
  type DestinationCapabilities,
  DestinationError,
  type DestinationOptions,
  type RejectedItem,
  rangeColumn,
  rejectedList,
  type TableSpecOverrides,
  type UnreadGuard,
  unreadColumn,
  type WriteBatch,
  type WriteResult,
} from '../destination.js';
import {
  columnDdl,
  copyLine,
  createTableSql,
  fillFromRawSql,
  hasOpenRejectedSql,
  ident,
  indexSql,
  isoText,
  mergeSql,
  PG_TYPES,
  postgresDialect,
  rejectedUpsertSql,
  resolveRejectedSql,
  seenSql,
  stagedColumns,
  systemTables,
  touchSql,
} from './sql.js';

export interface PostgresDestinationOptions extends DestinationOptions {
  /** Schema holding the tables (default `support`). */
  readonly schema?: string;
  /** Maximum connections in the pool (default 8). */
  readonly poolSize?: number;
}

export const POSTGRES_CAPABILITIES: DestinationCapabilities = {
  kind: 'postgres',
  transactionalCheckpoints: true,
  stagingLoad: 'copy',
  merge: 'insert_on_conflict',
  concurrentWritersPerTable: true,
  additiveMigrations: true,
  physicalLayout: 'indexes',
  recommendedBatchRows: 10_000,
  maxStringLength: 256 * 1024 * 1024,
};

/** Namespace of our advisory locks (first key of the two-int form); the second is hashtext(schema.table). */
const LOCK_NAMESPACE = 0x5359_4e43; // 'SYNC'
const COPY_CHUNK_ROWS = 500;

/**
 * PostgreSQL destination. A batch is validated, de-duplicated by primary key and sorted, COPY'd (text
 * format, pg-copy-streams) into a temporary staging table created for the transaction, then merged with
 * `INSERT … SELECT … ON CONFLICT DO UPDATE WHERE <incoming wins>`; the checkpoint is upserted in the same
 * transaction. Merges into one table are serialized by a transaction-scoped advisory lock taken after
 * staging, so concurrent writers neither deadlock nor lose updates, and staging still runs in parallel.
 */
export class PostgresDestination implements Destination {
  readonly capabilities = POSTGRES_CAPABILITIES;
  readonly schema: string;
  readonly #pool: pg.Pool;
  readonly #password: Secret;
  readonly #clock: () => Date;
  /** No test clock: `_synced_at` comes from the server's `now()` (transaction start). */
  readonly #serverClock: boolean;
  readonly #hooks: NonNullable<DestinationOptions['hooks']>;
  readonly #tables: TableSpecOverrides;

  constructor(connectionString: string, options: PostgresDestinationOptions = {}) {
    this.schema = options.schema ?? 'support';
    ident(this.schema);
    let password = '';
    try {
      password = decodeURIComponent(new URL(connectionString).password);
    } catch {
      // not a URL (key=value form): nothing to extract
    }
    this.#password = new Secret(password);
    this.#clock = options.clock ?? (() => new Date());
    this.#serverClock = options.clock === undefined;
    this.#hooks = options.hooks ?? {};
    this.#tables = options.tables ?? {};
    this.#pool = new pg.Pool({
      connectionString,
      max: options.poolSize ?? 8,
      application_name: 'support-sync',
    });
    // An idle client losing its connection must not crash the process; the next query reports it.
    this.#pool.on('error', () => undefined);
  }

  /** Wraps any error so that no credential leaves this class. */
  #fail(context: string, err: unknown): never {
    if (err instanceof WarehouseRowError || err instanceof DestinationError) throw err;
    const e = err as { message?: string; code?: string };
    const message = this.#password.scrub(scrubUrls(`${context}: ${e.message ?? String(err)}`));
    const wrapped = new DestinationError(message);
    if (e.code) Object.assign(wrapped, { code: e.code });
    throw wrapped;
  }

  #table(name: string) {
    return `${ident(this.schema)}.${ident(name)}`;
  }

  /** The spec of a table: the model's, unless the options replaced it. */
  #spec(name: TableName): TableSpec<unknown> {
    return (this.#tables[name] ?? tableSpecOf(name)) as TableSpec<unknown>;
  }

  async #tx<T>(context: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      this.#fail(context, err);
    }
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      this.#fail(context, err);
    } finally {
      client.release();
    }
  }

  async #lockTable(client: pg.PoolClient, table: string): Promise<void> {
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [
      LOCK_NAMESPACE,
      `${this.schema}.${table}`,
    ]);
  }

  async prepare(): Promise<void> {
    await this.#tx('prepare', async (client) => {
      // Serializes concurrent prepare() calls (CREATE … IF NOT EXISTS is not race-free).
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [
        LOCK_NAMESPACE,
        `${this.schema}:ddl`,
      ]);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${ident(this.schema)}`);
      const existing = await client.query<{ table_name: string; column_name: string; is_nullable: string }>(
        'SELECT table_name, column_name, is_nullable FROM information_schema.columns WHERE table_schema = $1',
        [this.schema],
      );
      const have = new Map<string, Set<string>>();
      const notNull = new Set<string>();
      for (const r of existing.rows) {
        if (!have.has(r.table_name)) have.set(r.table_name, new Set());
        have.get(r.table_name)!.add(r.column_name);
        if (r.is_nullable === 'NO') notNull.add(`${r.table_name}.${r.column_name}`);
      }
      const all = [
        ...TABLE_NAMES.map((name) => this.#spec(name)).map((t) => ({
          name: t.name as string,
          primaryKey: t.primaryKey,
          columns: t.columns,
          indexes: t.indexes,
        })),
        ...systemTables.map((t) => ({
          name: t.name as string,
          primaryKey: t.primaryKey,
          columns: t.columns,
          // _rejected: each batch looks up the open entries of its table by item id.
          indexes:
            t.name === '_sync_runs'
              ? [['started_at']]
              : t.name === '_rejected'
                ? [['table_name', 'item_id']]
                : [],
        })),
      ];
      for (const t of all) {
        const cols = have.get(t.name);
        if (!cols) {
          await client.query(createTableSql(this.schema, t.name, t.columns, t.primaryKey));
        } else {
          // Additive migration: new columns are added nullable, then filled from `_raw` where it has them.
          for (const c of t.columns)
            if (!cols.has(c.name)) {
              await client.query(
                `ALTER TABLE ${this.#table(t.name)} ADD COLUMN IF NOT EXISTS ${columnDdl(c, false)}`,
              );
              const fill = cols.has('_raw') ? fillFromRawSql(this.schema, t.name, c) : null;
              if (fill) await client.query(fill);
            } else if (c.nullable && notNull.has(`${t.name}.${c.name}`)) {
              // A field the reader now treats as open (it may be missing): the column accepts null.
              await client.query(
                `ALTER TABLE ${this.#table(t.name)} ALTER COLUMN ${ident(c.name)} DROP NOT NULL`,
              );
            }
        }
        for (const index of t.indexes) await client.query(indexSql(this.schema, t.name, index));
      }
      await this.#createViews(client);
    });
  }

  /**
   * The BI views (schemas/warehouse-views.ts), after the tables so they see every migrated column. CREATE OR
   * REPLACE cannot drop or retype a view column: when a definition changed that way the view is dropped and
   * created again (without CASCADE: a user's object built on it makes prepare() fail loudly instead).
   */
  async #createViews(client: pg.PoolClient): Promise<void> {
    const dialect = postgresDialect(this.schema);
    for (const view of WAREHOUSE_VIEWS) {
      const name = this.#table(view.name);
      const body = view.sql(dialect);
      await client.query('SAVEPOINT view_ddl');
      try {
        await client.query(`CREATE OR REPLACE VIEW ${name} AS\n${body}`);
      } catch {
        await client.query('ROLLBACK TO SAVEPOINT view_ddl');
        await client.query(`DROP VIEW IF EXISTS ${name}`);
        await client.query(`CREATE VIEW ${name} AS\n${body}`);
      }
      await client.query('RELEASE SAVEPOINT view_ddl');
      const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
      await client.query(`COMMENT ON VIEW ${name} IS ${literal(view.description)}`);
      for (const c of view.columns)
        await client.query(`COMMENT ON COLUMN ${name}.${ident(c.name)} IS ${literal(c.description)}`);
    }
  }

  async recordReconciliation(rows: readonly ReconciliationRecord[]): Promise<void> {
    const parsed = rows.map((r) => ReconciliationRecord.parse(r));
    if (parsed.length === 0) return;
    const cols = Object.keys(ReconciliationRecord.shape) as (keyof ReconciliationRecord)[];
    await this.#tx('recordReconciliation', async (client) => {
      for (const r of parsed)
        await client.query(
          `INSERT INTO ${this.#table('_reconciliation')} (${cols.map(ident).join(', ')})
           VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})
           ON CONFLICT (run_id, metric, period) DO UPDATE SET ${cols
             .filter((c) => !['run_id', 'metric', 'period'].includes(c))
             .map((c) => `${ident(c)} = EXCLUDED.${ident(c)}`)
             .join(', ')}`,
          cols.map((c) => r[c]),
        );
    });
  }

  async listReconciliation(runId?: string): Promise<ReconciliationRecord[]> {
    const table = this.#table('_reconciliation');
    try {
      const r = await this.#pool.query(
        `SELECT run_id, metric, period, source_value, warehouse_value, status, note, ${isoText('checked_at')} AS checked_at
         FROM ${table}
         WHERE run_id = COALESCE($1, (SELECT run_id FROM ${table} ORDER BY checked_at DESC, run_id DESC LIMIT 1))
         ORDER BY metric, period`,
        [runId ?? null],
      );
      return r.rows.map((row) => ReconciliationRecord.parse(row));
    } catch (err) {
      this.#fail('listReconciliation', err);
    }
  }

  async select(build: (dialect: SqlDialect) => string): Promise<Record<string, unknown>[]> {
    try {
      // timestamptz as text, so that microseconds survive (a JS Date keeps milliseconds only).
      const types = {
        getTypeParser: (oid: number, format?: 'text' | 'binary') =>
          oid === 1184
            ? (v: string) => canonicalTimestamp(v.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'))
            : pg.types.getTypeParser(oid, format as 'text'),
      };
      const r = await this.#pool.query({ text: build(postgresDialect(this.schema)), types: types as never });
      const numeric = new Set(
        r.fields.filter((f) => f.dataTypeID === 20 || f.dataTypeID === 1700).map((f) => f.name),
      );
      return r.rows.map((row: Record<string, unknown>) => {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(row))
          out[k] = v instanceof Date ? canonicalTimestamp(v) : numeric.has(k) && v !== null ? Number(v) : v;
        return out;
      });
    } catch (err) {
      this.#fail('select', err);
    }
  }

  async writeBatch<T extends TableName>(batch: WriteBatch<T>): Promise<WriteResult> {
    const [result] = await this.#write(`writeBatch ${batch.table}`, [batch], batch.checkpoint);
    return result!;
  }

  async writeTables(
    batches: readonly WriteBatch[],
    checkpoint?: CheckpointUpdate | readonly CheckpointUpdate[],
  ): Promise<WriteResult[]> {
    return this.#write(`writeTables ${batches.map((b) => b.table).join(', ')}`, batches, checkpoint);
  }

  /** Validates every batch first, then merges them (tables locked in name order) and the checkpoints in one transaction. */
  async #write(
    context: string,
    batches: readonly WriteBatch[],
    checkpoint: WriteBatch['checkpoint'],
  ): Promise<WriteResult[]> {
    const prepared = batches.map((batch) => {
      const spec = this.#spec(batch.table);
      const rows = dedupeRows(spec, toValidatedRows(batch.table, batch.rows, spec));
      rows.sort((a, b) => {
        const ka = rowKey(spec, a);
        const kb = rowKey(spec, b);
        return ka < kb ? -1 : ka > kb ? 1 : 0;
      });
      return { batch, spec, rows };
    });
    const rejected = rejectedList(batches.flatMap((b) => b.rejected ?? []));
    const order = prepared
      .map((p, i) => ({ p, i }))
      .sort((a, b) => (a.p.spec.name < b.p.spec.name ? -1 : a.p.spec.name > b.p.spec.name ? 1 : 0));
    return this.#tx(context, async (client) => {
      const syncedAt = await this.#stamp(client);
      const results: WriteResult[] = new Array(prepared.length);
      for (const { p, i } of order) {
        const { batch, spec, rows } = p;
        let inserted = 0;
        let updated = 0;
        if (rows.length > 0) {
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
          await this.#hooks.beforeMerge?.(batch.table);
          await this.#lockTable(client, spec.name);
          const merged = await client.query<{ inserted: number; updated: number }>(
            mergeSql(this.schema, spec, stage, batch.repair === true),
            [syncedAt],
          );
          inserted = merged.rows[0]?.inserted ?? 0;
          updated = merged.rows[0]?.updated ?? 0;
          await client.query(touchSql(this.schema, spec, stage), [syncedAt]);
        }
        if (batch.seen && batch.seen.length > 0) {
          if (rows.length === 0) await this.#lockTable(client, spec.name);
          await client.query(seenSql(this.schema, spec), [syncedAt, batch.seen]);
        }
        const received = batch.rows.length;
        results[i] = { received, inserted, updated, unchanged: received - inserted - updated };
      }
      const stored = prepared.filter((p) => p.rows.length > 0).map((p) => p.spec);
      await this.#writeRejected(client, stored, rejected, syncedAt);
      await this.#upsertCheckpoints(client, checkpointList(checkpoint), syncedAt);
      return results;
    });
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
    const toResolve: TableSpec<unknown>[] = [];
    for (const spec of stored.filter((s) => s.primaryKey.length === 1)) {
      const r = await client.query<{ open: boolean }>(hasOpenRejectedSql(this.schema, spec, stageOf(spec)), [
        spec.name,
      ]);
      if (r.rows[0]?.open) toResolve.push(spec);
    }
    if (toResolve.length === 0 && rejected.length === 0) return;
    await this.#lockTable(client, '_rejected');
    for (const spec of toResolve)
      await client.query(resolveRejectedSql(this.schema, spec, stageOf(spec)), [spec.name, syncedAt]);
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
    await client.query(rejectedUpsertSql(this.schema), [syncedAt, JSON.stringify(records)]);
  }

  async currentTime(): Promise<Date> {
    if (!this.#serverClock) return this.#clock();
    try {
      const r = await this.#pool.query<{ t: Date }>('SELECT now() AS t');
      return r.rows[0]!.t;
    } catch (err) {
      this.#fail('currentTime', err);
    }
  }

  /** `_synced_at` of a transaction: the server's transaction time (never earlier than a prior currentTime()). */
  async #stamp(client: pg.PoolClient): Promise<Date> {
    if (!this.#serverClock) return this.#clock();
    const r = await client.query<{ t: Date }>('SELECT now() AS t');
    return r.rows[0]!.t;
  }

  async writeCheckpoints(checkpoints: readonly CheckpointUpdate[]): Promise<void> {
    const list = checkpointList(checkpoints);
    if (list.length === 0) return;
    await this.#tx('writeCheckpoints', (client) => this.#upsertCheckpoints(client, list, this.#clock()));
  }

  /** One statement for any number of checkpoints (a tickets page queues up to a page of threads). */
  async #upsertCheckpoints(
    client: pg.PoolClient,
    list: readonly CheckpointUpdate[],
    at: Date,
  ): Promise<void> {
    if (list.length === 0) return;
    if (list.length === 1) return this.#upsertCheckpoint(client, list[0]!, at);
    const column = <K extends keyof CheckpointUpdate>(k: K) => list.map((cp) => cp[k]);
    await client.query(
      `INSERT INTO ${this.#table('_sync_state')} (stream, scope, cursor, high_water_mark, status, pages, rows, updated_at)
       SELECT s.stream, s.scope, s.cursor, s.hwm, s.status, s.pages, s.rows, $8
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[])
         AS s(stream, scope, cursor, hwm, status, pages, rows)
       ON CONFLICT (stream, scope) DO UPDATE SET cursor = EXCLUDED.cursor, high_water_mark = EXCLUDED.high_water_mark,
         status = EXCLUDED.status, pages = EXCLUDED.pages, rows = EXCLUDED.rows, updated_at = EXCLUDED.updated_at`,
      [
        column('stream'),
        column('scope'),
        column('cursor'),
        column('high_water_mark'),
        column('status'),
        column('pages'),
        column('rows'),
        at,
      ],
    );
  }

  async #upsertCheckpoint(client: pg.PoolClient, cp: CheckpointUpdate, at: Date): Promise<void> {
    await client.query(
      `INSERT INTO ${this.#table('_sync_state')} (stream, scope, cursor, high_water_mark, status, pages, rows, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (stream, scope) DO UPDATE SET cursor = EXCLUDED.cursor, high_water_mark = EXCLUDED.high_water_mark,
         status = EXCLUDED.status, pages = EXCLUDED.pages, rows = EXCLUDED.rows, updated_at = EXCLUDED.updated_at`,
      [cp.stream, cp.scope, cp.cursor, cp.high_water_mark, cp.status, cp.pages, cp.rows, at],
    );
  }

  #checkpointSelect(where: string): string {
    return `SELECT stream, scope, cursor, high_water_mark, status, pages::int AS pages, rows::int AS rows,
      ${isoText('updated_at')} AS updated_at FROM ${this.#table('_sync_state')} ${where} ORDER BY stream, scope`;
  }

  async readCheckpoint(stream: string, scope: string): Promise<Checkpoint | null> {
    try {
      const r = await this.#pool.query(this.#checkpointSelect('WHERE stream = $1 AND scope = $2'), [
        stream,
        scope,
      ]);
      return r.rows[0] ? Checkpoint.parse(r.rows[0]) : null;
    } catch (err) {
      this.#fail('readCheckpoint', err);
    }
  }

  async listCheckpoints(stream?: string, filter: CheckpointFilter = {}): Promise<Checkpoint[]> {
    try {
      const conditions: string[] = [];
      const params: unknown[] = [];
      if (stream !== undefined) conditions.push(`stream = $${params.push(stream)}`);
      if (filter.status !== undefined) conditions.push(`status = $${params.push(filter.status)}`);
      const where = conditions.length ? `WHERE ${conditions.join(' AND ')}` : '';
      const limit = filter.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(filter.limit))}` : '';
      const r = await this.#pool.query(this.#checkpointSelect(where) + limit, params);
      return r.rows.map((row) => Checkpoint.parse(row));
    } catch (err) {
      this.#fail('listCheckpoints', err);
    }
  }

  async storedVersions(table: TableName, ids: readonly string[]): Promise<Map<string, StoredVersion>> {
    const spec = this.#spec(table);
    if (spec.primaryKey.length !== 1)
      throw new DestinationError(`storedVersions: ${table} has a composite key`);
    const pk = ident(spec.primaryKey[0]!);
    const version = spec.versionColumn ? isoText(`t.${ident(spec.versionColumn)}`) : 'NULL::text';
    const live = spec.tracksDeletion ? ' AND t."_deleted_at" IS NULL' : '';
    try {
      const r = await this.#pool.query<{ id: string; version: string | null; hash: string | null }>(
        `SELECT t.${pk}::text AS id, ${version} AS version, t."_content_hash" AS hash
         FROM ${this.#table(table)} t WHERE t.${pk} = ANY($1::text[])${live}`,
        [ids],
      );
      return new Map(r.rows.map((row) => [row.id, { version: row.version, contentHash: row.hash }]));
    } catch (err) {
      this.#fail('storedVersions', err);
    }
  }

  async markDeleted(
    table: TableName,
    ids: readonly string[],
    deletedAt: Date,
    checkpoint?: CheckpointUpdate,
  ): Promise<number> {
    const spec = this.#deletable(table);
    return this.#tx(`markDeleted ${table}`, async (client) => {
      await this.#lockTable(client, table);
      const r = await client.query(
        `UPDATE ${this.#table(table)} SET "_deleted_at" = $1 WHERE ${ident(spec.primaryKey[0]!)} = ANY($2::text[]) AND "_deleted_at" IS NULL`,
        [deletedAt, ids],
      );
      if (checkpoint) await this.#upsertCheckpoint(client, checkpoint, this.#clock());
      return r.rowCount ?? 0;
    });
  }

  async markDeletedNotSeenSince(
    table: TableName,
    since: Date,
    deletedAt: Date,
    checkpoint?: CheckpointUpdate,
    within?: DeletionRange,
    unlessUnread?: UnreadGuard,
  ): Promise<number> {
    const spec = this.#deletable(table);
    const params: unknown[] = [deletedAt, since];
    const conditions = ['t."_synced_at" < $2', 't."_deleted_at" IS NULL'];
    if (within) conditions.push(`t.${ident(rangeColumn(spec, within))} >= $${params.push(within.from)}`);
    if (unlessUnread) {
      // Not read is not gone: a row of a scope whose read is queued, running or failed keeps living.
      const column = ident(unreadColumn(spec, unlessUnread));
      conditions.push(`NOT EXISTS (SELECT 1 FROM ${this.#table('_sync_state')} s
        WHERE s.stream = $${params.push(unlessUnread.stream)} AND s.status <> 'complete' AND s.scope = t.${column}::text)`);
    }
    return this.#tx(`markDeletedNotSeenSince ${table}`, async (client) => {
      await this.#lockTable(client, table);
      const r = await client.query(
        `UPDATE ${this.#table(table)} AS t SET "_deleted_at" = $1 WHERE ${conditions.join(' AND ')}`,
        params,
      );
      if (checkpoint) await this.#upsertCheckpoint(client, checkpoint, this.#clock());
      return r.rowCount ?? 0;
    });
  }

  async cascadeDeletion(
    cascade: DeletionCascade,
    deletedAt: Date,
  ): Promise<{ marked: number; revived: number }> {
    const child = this.#deletable(cascade.child);
    const parent = this.#deletable(cascade.parent);
    const fk = cascadeColumn(child, cascade);
    const parentKey = ident(parent.primaryKey[0]!);
    const parents = (deleted: boolean) =>
      `SELECT ${parentKey} FROM ${this.#table(parent.name)} WHERE "_deleted_at" IS ${deleted ? 'NOT ' : ''}NULL`;
    return this.#tx(`cascadeDeletion ${child.name}`, async (client) => {
      await this.#lockTable(client, child.name);
      const marked = await client.query(
        `UPDATE ${this.#table(child.name)} SET "_deleted_at" = $1 WHERE "_deleted_at" IS NULL AND ${ident(fk)} IN (${parents(true)})`,
        [deletedAt],
      );
      const revived = cascade.revive
        ? await client.query(
            `UPDATE ${this.#table(child.name)} SET "_deleted_at" = NULL WHERE "_deleted_at" IS NOT NULL AND ${ident(fk)} IN (${parents(false)})`,
          )
        : { rowCount: 0 };
      return { marked: marked.rowCount ?? 0, revived: revived.rowCount ?? 0 };
    });
  }

  async staleThreads(verifiedBefore: Date, limit: number): Promise<string[]> {
    try {
      const r = await this.#pool.query<{ scope: string }>(
        `SELECT s.scope FROM ${this.#table('_sync_state')} s
         JOIN ${this.#table('tickets')} t ON t.ticket_number::text = s.scope AND t."_deleted_at" IS NULL
         WHERE s.stream = $1 AND s.status = 'complete' AND s.updated_at < $2
         ORDER BY s.updated_at, s.scope LIMIT $3`,
        [THREAD_QUEUE_STREAM, verifiedBefore, Math.max(0, Math.floor(limit))],
      );
      return r.rows.map((row) => row.scope);
    } catch (err) {
      this.#fail('staleThreads', err);
    }
  }

  async freshness(): Promise<Freshness> {
    try {
      const tickets = await this.#pool.query(
        `SELECT count(*)::int AS live, ${isoText('min("_synced_at")')} AS oldest
         FROM ${this.#table('tickets')} WHERE "_deleted_at" IS NULL`,
      );
      const threads = await this.#pool.query(
        `SELECT count(*)::int AS live,
           count(*) FILTER (WHERE s.status IS DISTINCT FROM 'complete')::int AS unread,
           ${isoText(`min(s.updated_at) FILTER (WHERE s.status = 'complete')`)} AS oldest
         FROM ${this.#table('tickets')} t
         LEFT JOIN ${this.#table('_sync_state')} s ON s.stream = $1 AND s.scope = t.ticket_number::text
         WHERE t."_deleted_at" IS NULL`,
        [THREAD_QUEUE_STREAM],
      );
      const [t, m] = [tickets.rows[0], threads.rows[0]];
      return Freshness.parse({
        tickets: { live: t.live, oldestVerifiedAt: t.oldest },
        threads: { live: m.live, unread: m.unread, oldestVerifiedAt: m.oldest },
      });
    } catch (err) {
      this.#fail('freshness', err);
    }
  }

  #deletable(table: TableName): TableSpec<unknown> {
    const spec = this.#spec(table);
    if (!spec.tracksDeletion) throw new DestinationError(`${table} does not track deletions`);
    return spec;
  }

  async recordRun(run: SyncRunRecord): Promise<void> {
    const r = SyncRunRecord.parse(run);
    const cols = Object.keys(r) as (keyof SyncRunRecord)[];
    try {
      await this.#pool.query(
        `INSERT INTO ${this.#table('_sync_runs')} (${cols.map(ident).join(', ')})
         VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})
         ON CONFLICT (run_id) DO UPDATE SET ${cols
           .filter((c) => c !== 'run_id')
           .map((c) => `${ident(c)} = EXCLUDED.${ident(c)}`)
           .join(', ')}`,
        cols.map((c) => r[c]),
      );
    } catch (err) {
      this.#fail('recordRun', err);
    }
  }

  async listRuns(limit: number): Promise<SyncRunRecord[]> {
    try {
      const r = await this.#pool.query(
        `SELECT run_id, parent_run_id, workflow_id, stream, ${isoText('window_start')} AS window_start,
          ${isoText('window_end')} AS window_end, mode, status, ${isoText('started_at')} AS started_at,
          ${isoText('finished_at')} AS finished_at, pages::int AS pages, rows_written::int AS rows_written,
          requests::int AS requests, error
         FROM ${this.#table('_sync_runs')} ORDER BY started_at DESC, run_id LIMIT $1`,
        [limit],
      );
      return r.rows.map((row) => SyncRunRecord.parse(row));
    } catch (err) {
      this.#fail('listRuns', err);
    }
  }

  /** Runs a read-only query (tests, status command). Errors are scrubbed like every other call. */
  async query<R extends pg.QueryResultRow = Record<string, unknown>>(
    sql: string,
    params: unknown[] = [],
  ): Promise<R[]> {
    try {
      return (await this.#pool.query<R>(sql, params)).rows;
    } catch (err) {
      this.#fail('query', err);
    }
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}

/** The temporary staging table of a table's batch (dropped at commit). */
const stageOf = (spec: TableSpec<unknown>) => `_stage_${spec.name}`;

function* copyChunks(cols: ReturnType<typeof stagedColumns>, rows: readonly Record<string, unknown>[]) {
  for (let i = 0; i < rows.length; i += COPY_CHUNK_ROWS) {
    let chunk = '';
    const end = Math.min(rows.length, i + COPY_CHUNK_ROWS);
    for (let j = i; j < end; j++) chunk += copyLine(cols, rows[j]!);
    yield Buffer.from(chunk, 'utf8');
  }
}

/** Removes user:password from any URL in a text. */
export function scrubUrls(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^/@\s]*)@/gi, '$1[redacted]@');
}
