import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  BigQuery,
  type BigQueryOptions,
  type Job,
  type Query,
  type TableMetadata,
} from '@google-cloud/bigquery';
import { GoogleAuth, PassThroughClient } from 'google-auth-library';
import {
  Checkpoint,
  type CheckpointUpdate,
  canonicalTimestamp,
  dedupeRows,
  Freshness,
  ReconciliationRecord,
  type StoredVersion,
  SYSTEM_TABLES,
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
  rangeColumn,
  rejectedList,
  type TableSpecOverrides,
  type UnreadGuard,
  unreadColumn,
  type WriteBatch,
  type WriteResult,
} from '../destination.js';
import {
  BQ_TYPES,
  bigQueryDialect,
  bqIdent,
  checkpointMergeSql,
  fieldOf,
  fillFromRawSql,
  mergeScript,
  multiMergeScript,
  ndjsonLine,
  rowlessScript,
  type SyncedAt,
  stagedColumns,
  stringLiteral,
  timestampLiteral,
} from './sql.js';

export interface BigQueryDestinationOptions extends DestinationOptions {
  readonly projectId: string;
  readonly datasetId: string;
  /** Location of the dataset and jobs (default `US`). */
  readonly location?: string;
  /**
   * API endpoint of an emulator (e.g. http://127.0.0.1:9050). When set, requests carry no credentials;
   * otherwise the client uses Application Default Credentials.
   */
  readonly apiEndpoint?: string;
  /** Attempts for a transaction aborted by a concurrent update of the same table (default 8). */
  readonly maxConflictRetries?: number;
}

export const BIGQUERY_CAPABILITIES: DestinationCapabilities = {
  kind: 'bigquery',
  transactionalCheckpoints: true,
  stagingLoad: 'load_job',
  merge: 'merge_statement',
  concurrentWritersPerTable: true,
  additiveMigrations: true,
  physicalLayout: 'partitioning_clustering',
  recommendedBatchRows: 50_000,
  maxStringLength: 10 * 1024 * 1024,
};

/** `bigquery://<project>/<dataset>` → ids. */
export function parseBigQueryUrl(url: string): { projectId: string; datasetId: string } {
  const m = /^bigquery:\/\/([^/?#]+)\/([A-Za-z0-9_]+)\/?$/.exec(url);
  if (!m) throw new Error('a BigQuery destination URL has the form bigquery://<project>/<dataset>');
  return { projectId: m[1]!, datasetId: m[2]! };
}

/**
 * Client options for an emulator: no credentials. Going through the auth client anyway (a pass-through
 * client) gives every request a header object, which the client's multipart upload of load jobs requires
 * (without it the upload fails in teeny-request setting Content-Type on undefined headers).
 */
export function emulatorClientOptions(apiEndpoint: string): BigQueryOptions {
  // useAuthWithCustomEndpoint is honoured by @google-cloud/common but missing from BigQueryOptions' typings,
  // and the client's typings pin an older copy of google-auth-library's GoogleAuth: hence the cast.
  return {
    apiEndpoint,
    useAuthWithCustomEndpoint: true,
    authClient: new GoogleAuth({ authClient: new PassThroughClient() }),
  } as unknown as BigQueryOptions;
}

const STAGE_TTL_MS = 6 * 60 * 60 * 1000;

/**
 * BigQuery destination. A batch is validated and de-duplicated, loaded with a load job (free, atomic; no
 * streaming inserts) into a staging table of its own (expiring after 6 h in case the process dies), then
 * one multi-statement transaction MERGEs it into the target with the version rule and MERGEs the
 * checkpoint into `_sync_state`; the staging table is dropped afterwards. BigQuery aborts one of two
 * transactions that update the same table concurrently: the script is retried with backoff.
 */
export class BigQueryDestination implements Destination {
  readonly capabilities = BIGQUERY_CAPABILITIES;
  readonly #bq: BigQuery;
  readonly #dataset: string;
  readonly #location: string;
  readonly #clock: () => Date;
  /** No test clock: `_synced_at` is BigQuery's `CURRENT_TIMESTAMP()`. */
  readonly #serverClock: boolean;
  readonly #hooks: NonNullable<DestinationOptions['hooks']>;
  readonly #maxRetries: number;
  readonly #tables: TableSpecOverrides;

  constructor(options: BigQueryDestinationOptions) {
    bqIdent(options.datasetId);
    this.#dataset = options.datasetId;
    this.#location = options.location ?? 'US';
    this.#clock = options.clock ?? (() => new Date());
    this.#serverClock = options.clock === undefined;
    this.#hooks = options.hooks ?? {};
    this.#maxRetries = options.maxConflictRetries ?? 8;
    this.#tables = options.tables ?? {};
    this.#bq = new BigQuery({
      projectId: options.projectId,
      location: this.#location,
      ...(options.apiEndpoint ? emulatorClientOptions(options.apiEndpoint) : {}),
    });
  }

  #fail(context: string, err: unknown): never {
    if (err instanceof WarehouseRowError || err instanceof DestinationError) throw err;
    const message = (err as { message?: string }).message ?? String(err);
    throw new DestinationError(
      `${context}: ${message.replace(/(access_token|Bearer)[=: ]+\S+/gi, '$1 [redacted]')}`,
    );
  }

  #table(name: string): string {
    return `${bqIdent(this.#dataset)}.${bqIdent(name)}`;
  }

  /** The spec of a table: the model's, unless the options replaced it. */
  #spec(name: TableName): TableSpec<unknown> {
    return (this.#tables[name] ?? tableSpecOf(name)) as TableSpec<unknown>;
  }

  /**
   * Runs a query or script as a job and returns the rows of its last statement; job errors throw. With
   * `parseJSON`, JSON columns come back parsed (as PostgreSQL's jsonb does), not as text.
   */
  async #run<R = Record<string, unknown>>(
    query: string,
    params: Record<string, unknown> = {},
    types: Record<string, string> = {},
    results: { parseJSON?: boolean } = {},
  ): Promise<R[]> {
    const options = { query, location: this.#location, params, types } as Query;
    const [job] = (await this.#bq.createQueryJob(options)) as [Job, unknown];
    const [rows] = await job.getQueryResults({ parseJSON: results.parseJSON ?? false });
    const [meta] = await job.getMetadata();
    const error = meta?.status?.errorResult;
    if (error) throw new Error(`${error.reason ?? 'error'}: ${error.message ?? ''}`);
    return rows as R[];
  }

  async prepare(): Promise<void> {
    try {
      const dataset = this.#bq.dataset(this.#dataset);
      const [exists] = await dataset.exists();
      if (!exists) {
        await dataset.create({ location: this.#location }).catch((err: { code?: number }) => {
          if (err.code !== 409) throw err; // created concurrently
        });
      }
      const layouts = [
        ...TABLE_NAMES.map((name) => this.#spec(name)).map((t) => ({
          name: t.name as string,
          columns: t.columns,
          description: t.description,
          partitionBy: t.partitionBy,
          clusterBy: t.clusterBy,
        })),
        ...Object.values(SYSTEM_TABLES).map((t) => ({
          name: t.name as string,
          columns: t.columns,
          description: t.description,
          partitionBy: null,
          clusterBy: t.primaryKey,
        })),
      ];
      for (const t of layouts) {
        const table = dataset.table(t.name);
        const [tableExists] = await table.exists();
        if (!tableExists) {
          const metadata: TableMetadata = {
            schema: { fields: t.columns.map((c) => fieldOf(c, true)) },
            description: t.description,
            ...(t.partitionBy ? { timePartitioning: { type: 'DAY', field: t.partitionBy } } : {}),
            ...(t.clusterBy.length > 0 ? { clustering: { fields: [...t.clusterBy].slice(0, 4) } } : {}),
          };
          await table.create(metadata).catch((err: { code?: number }) => {
            if (err.code !== 409) throw err;
          });
          continue;
        }
        // Additive migration: append missing columns as NULLABLE (tables.patch keeps existing data).
        const [meta] = await table.getMetadata();
        const fields = (meta.schema?.fields ?? []) as { name: string; mode?: string }[];
        const have = new Set(fields.map((f) => f.name));
        // Fields the reader now treats as open (they may be missing) become NULLABLE (a relaxation BigQuery
        // allows on a table with data).
        const relaxed = t.columns.filter(
          (c) => c.nullable && fields.some((f) => f.name === c.name && f.mode === 'REQUIRED'),
        );
        for (const c of relaxed)
          await this.#run(`ALTER TABLE ${this.#table(t.name)} ALTER COLUMN ${bqIdent(c.name)} DROP NOT NULL`);
        const missing = t.columns.filter((c) => !have.has(c.name));
        if (missing.length === 0) continue;
        // Added with DDL (the documented path), nullable; then the schema is re-read, and patched through
        // tables.patch if the service still lists the old fields (the emulator keeps the two apart).
        for (const c of missing)
          await this.#run(
            `ALTER TABLE ${this.#table(t.name)} ADD COLUMN IF NOT EXISTS ${bqIdent(c.name)} ${BQ_TYPES[c.type]}`,
          );
        const [after] = await table.getMetadata();
        const afterFields = (after.schema?.fields ?? []) as { name: string }[];
        const stillMissing = missing.filter((c) => !afterFields.some((f) => f.name === c.name));
        if (stillMissing.length > 0)
          await table.setMetadata({
            schema: { fields: [...afterFields, ...stillMissing.map((c) => fieldOf(c, false))] },
          });
        // Then the new columns are filled from `_raw` where it has them (no re-fetch: the item is there).
        if (have.has('_raw'))
          for (const c of missing) {
            const fill = fillFromRawSql(this.#dataset, t.name, c);
            if (fill) await this.#retryConflicts(() => this.#run(fill));
          }
      }
      // The BI views (schemas/warehouse-views.ts), after the tables so they see every migrated column.
      const dialect = bigQueryDialect(this.#dataset);
      for (const view of WAREHOUSE_VIEWS)
        await this.#run(`CREATE OR REPLACE VIEW ${this.#table(view.name)} AS\n${view.sql(dialect)}`);
    } catch (err) {
      this.#fail('prepare', err);
    }
  }

  async recordReconciliation(rows: readonly ReconciliationRecord[]): Promise<void> {
    const parsed = rows.map((r) => ReconciliationRecord.parse(r));
    if (parsed.length === 0) return;
    // One MERGE with query parameters: notes and view names are arbitrary text, which the emulator does not
    // take as struct-array literals (and parameters are the clean way on the real service too).
    const cols = SYSTEM_TABLES._reconciliation.columns;
    const typeOf = { string: 'STRING', float: 'FLOAT64', timestamp: 'TIMESTAMP' } as Record<string, string>;
    const params: Record<string, unknown> = {};
    const types: Record<string, string> = {};
    const selects = parsed.map((r, i) => {
      const fields = cols.map((c) => {
        const name = `${c.name}_${i}`;
        const v = r[c.name as keyof ReconciliationRecord];
        params[name] = c.type === 'timestamp' && typeof v === 'string' ? this.#bq.timestamp(v) : v;
        types[name] = typeOf[c.type] ?? 'STRING';
        return `@${name} AS ${bqIdent(c.name)}`;
      });
      return `SELECT ${fields.join(', ')}`;
    });
    const names = cols.map((c) => c.name);
    const sql = `MERGE ${this.#table('_reconciliation')} T USING (${selects.join(' UNION ALL ')}) S
ON T.run_id = S.run_id AND T.metric = S.metric AND T.period = S.period
WHEN MATCHED THEN UPDATE SET ${names
      .filter((c) => !['run_id', 'metric', 'period'].includes(c))
      .map((c) => `${bqIdent(c)} = S.${bqIdent(c)}`)
      .join(', ')}
WHEN NOT MATCHED THEN INSERT (${names.map(bqIdent).join(', ')}) VALUES (${names.map((c) => `S.${bqIdent(c)}`).join(', ')})`;
    try {
      await this.#retryConflicts(() => this.#run(sql, params, types));
    } catch (err) {
      this.#fail('recordReconciliation', err);
    }
  }

  async listReconciliation(runId?: string): Promise<ReconciliationRecord[]> {
    const table = this.#table('_reconciliation');
    try {
      const run =
        runId ??
        (
          await this.#run<{ run_id: string }>(
            `SELECT run_id FROM ${table} ORDER BY checked_at DESC, run_id DESC LIMIT 1`,
          )
        )[0]?.run_id;
      if (run === undefined) return [];
      const rows = await this.#run(`SELECT * FROM ${table} WHERE run_id = @run ORDER BY metric, period`, {
        run,
      });
      return rows.map((r) => ReconciliationRecord.parse(normalize(r)));
    } catch (err) {
      this.#fail('listReconciliation', err);
    }
  }

  async select(build: (dialect: SqlDialect) => string): Promise<Record<string, unknown>[]> {
    try {
      const rows = await this.#run(build(bigQueryDialect(this.#dataset)), {}, {}, { parseJSON: true });
      return rows.map(normalize);
    } catch (err) {
      this.#fail('select', err);
    }
  }

  async writeBatch<T extends TableName>(batch: WriteBatch<T>): Promise<WriteResult> {
    const spec = this.#spec(batch.table);
    const rows = dedupeRows(spec, toValidatedRows(batch.table, batch.rows, spec));
    const rejected = rejectedList(batch.rejected);
    const received = batch.rows.length;
    const syncedAt = this.#syncedAt();
    const checkpoints = checkpointList(batch.checkpoint);
    const seen = batch.seen ?? [];
    if (rows.length === 0) {
      if (seen.length > 0 || rejected.length > 0) {
        try {
          const script = rowlessScript(this.#dataset, { spec, ids: seen }, rejected, syncedAt, checkpoints);
          await this.#retryConflicts(() => this.#run(script));
        } catch (err) {
          this.#fail(`writeBatch ${batch.table}`, err);
        }
      } else {
        await this.#checkpointOnly(checkpoints, syncedAt.checkpointTime);
      }
      return { received, inserted: 0, updated: 0, unchanged: received };
    }
    const stage = `_stage_${spec.name}_${randomBytes(6).toString('hex')}`;
    const cols = stagedColumns(spec);
    const stageTable = this.#bq.dataset(this.#dataset).table(stage);
    try {
      await stageTable.create({
        schema: { fields: cols.map((c) => fieldOf(c, false)) },
        expirationTime: String(Date.now() + STAGE_TTL_MS),
      });
      await this.#load(stage, cols, rows);
      await this.#hooks.beforeMerge?.(batch.table);
      const script = mergeScript(
        this.#dataset,
        spec,
        stage,
        syncedAt,
        checkpoints,
        seen,
        rejected,
        batch.repair === true,
      );
      const [counts] = await this.#retryConflicts(() =>
        this.#run<{ inserted: number; updated: number }>(script),
      );
      const inserted = Number(counts?.inserted ?? 0);
      const updated = Number(counts?.updated ?? 0);
      return { received, inserted, updated, unchanged: received - inserted - updated };
    } catch (err) {
      this.#fail(`writeBatch ${batch.table}`, err);
    } finally {
      await stageTable.delete().catch(() => undefined);
    }
  }

  async writeTables(
    batches: readonly WriteBatch[],
    checkpoint?: CheckpointUpdate | readonly CheckpointUpdate[],
  ): Promise<WriteResult[]> {
    const prepared = batches.map((batch) => {
      const spec = this.#spec(batch.table);
      return { batch, spec, rows: dedupeRows(spec, toValidatedRows(batch.table, batch.rows, spec)) };
    });
    const rejected = rejectedList(batches.flatMap((b) => b.rejected ?? []));
    const syncedAt = this.#syncedAt();
    const checkpoints = checkpointList(checkpoint);
    const loaded = prepared.filter((p) => p.rows.length > 0);
    if (loaded.length === 0) {
      if (rejected.length > 0) {
        const script = rowlessScript(this.#dataset, null, rejected, syncedAt, checkpoints);
        await this.#retryConflicts(() => this.#run(script)).catch((err) =>
          this.#fail(`writeTables ${batches.map((b) => b.table).join(', ')}`, err),
        );
      } else await this.#checkpointOnly(checkpoints, syncedAt.checkpointTime);
      return prepared.map((p) => ({
        received: p.batch.rows.length,
        inserted: 0,
        updated: 0,
        unchanged: p.batch.rows.length,
      }));
    }
    const stages = loaded.map((p) => ({
      ...p,
      stage: `_stage_${p.spec.name}_${randomBytes(6).toString('hex')}`,
    }));
    const context = `writeTables ${batches.map((b) => b.table).join(', ')}`;
    try {
      for (const s of stages) {
        const cols = stagedColumns(s.spec);
        await this.#bq
          .dataset(this.#dataset)
          .table(s.stage)
          .create({
            schema: { fields: cols.map((c) => fieldOf(c, false)) },
            expirationTime: String(Date.now() + STAGE_TTL_MS),
          });
        await this.#load(s.stage, cols, s.rows);
        await this.#hooks.beforeMerge?.(s.batch.table);
      }
      const script = multiMergeScript(this.#dataset, stages, syncedAt, checkpoints, rejected);
      const [counts] = await this.#retryConflicts(() => this.#run<Record<string, unknown>>(script));
      return prepared.map((p) => {
        const received = p.batch.rows.length;
        const i = stages.findIndex((s) => s.batch === p.batch);
        const inserted = i < 0 ? 0 : Number(counts?.[`inserted_${i}`] ?? 0);
        const updated = i < 0 ? 0 : Number(counts?.[`updated_${i}`] ?? 0);
        return { received, inserted, updated, unchanged: received - inserted - updated };
      });
    } catch (err) {
      return this.#fail(context, err);
    } finally {
      for (const s of stages)
        await this.#bq
          .dataset(this.#dataset)
          .table(s.stage)
          .delete()
          .catch(() => undefined);
    }
  }

  async #load(stage: string, cols: ReturnType<typeof stagedColumns>, rows: Record<string, unknown>[]) {
    const table = this.#bq.dataset(this.#dataset).table(stage);
    await new Promise<void>((resolve, reject) => {
      const stream = table.createWriteStream({
        sourceFormat: 'NEWLINE_DELIMITED_JSON',
        writeDisposition: 'WRITE_TRUNCATE',
        schema: { fields: cols.map((c) => fieldOf(c, false)) },
      });
      stream.on('error', reject);
      stream.on('complete', (job: Job) => {
        const error = job.metadata?.status?.errorResult;
        if (error) reject(new Error(`load job failed: ${error.message ?? error.reason}`));
        else resolve();
      });
      function* lines() {
        for (let i = 0; i < rows.length; i += 500) {
          let chunk = '';
          for (const row of rows.slice(i, i + 500)) chunk += ndjsonLine(cols, row);
          yield Buffer.from(chunk, 'utf8');
        }
      }
      Readable.from(lines()).pipe(stream);
    });
  }

  async #retryConflicts<R>(fn: () => Promise<R>): Promise<R> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        const message = (err as Error).message ?? '';
        const conflict = /concurrent update|Could not serialize|aborted due to concurrent/i.test(message);
        if (!conflict || attempt >= this.#maxRetries) throw err;
        await new Promise((r) => setTimeout(r, Math.min(8000, 100 * 2 ** attempt) * (0.5 + Math.random())));
      }
    }
  }

  async writeCheckpoints(checkpoints: readonly CheckpointUpdate[]): Promise<void> {
    await this.#checkpointOnly(checkpointList(checkpoints), this.#clock());
  }

  #syncedAt(): SyncedAt {
    const at = this.#clock();
    return { sql: this.#serverClock ? 'CURRENT_TIMESTAMP()' : timestampLiteral(at), checkpointTime: at };
  }

  async currentTime(): Promise<Date> {
    if (!this.#serverClock) return this.#clock();
    try {
      const [row] = await this.#run<{ t: { value: string } | string }>('SELECT CURRENT_TIMESTAMP() AS t');
      const t = row?.t;
      return new Date(typeof t === 'string' ? t : (t?.value ?? ''));
    } catch (err) {
      this.#fail('currentTime', err);
    }
  }

  async #checkpointOnly(list: readonly CheckpointUpdate[], at: Date): Promise<void> {
    if (list.length === 0) return;
    try {
      await this.#retryConflicts(() => this.#run(checkpointMergeSql(this.#dataset, list, at)));
    } catch (err) {
      this.#fail('checkpoint', err);
    }
  }

  #checkpointSelect(where: string): string {
    return `SELECT stream, scope, cursor, high_water_mark, status, pages, \`rows\`, updated_at
      FROM ${this.#table('_sync_state')} ${where} ORDER BY stream, scope`;
  }

  async readCheckpoint(stream: string, scope: string): Promise<Checkpoint | null> {
    try {
      const rows = await this.#run(this.#checkpointSelect('WHERE stream = @stream AND scope = @scope'), {
        stream,
        scope,
      });
      return rows[0] ? Checkpoint.parse(normalize(rows[0])) : null;
    } catch (err) {
      this.#fail('readCheckpoint', err);
    }
  }

  async listCheckpoints(stream?: string, filter: CheckpointFilter = {}): Promise<Checkpoint[]> {
    try {
      const conditions: string[] = [];
      const params: Record<string, unknown> = {};
      if (stream !== undefined) {
        conditions.push('stream = @stream');
        params['stream'] = stream;
      }
      if (filter.status !== undefined) {
        conditions.push('status = @status');
        params['status'] = filter.status;
      }
      const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
      const limit = filter.limit !== undefined ? ` LIMIT ${Math.max(0, Math.floor(filter.limit))}` : '';
      const rows = await this.#run(this.#checkpointSelect(where) + limit, params);
      return rows.map((r) => Checkpoint.parse(normalize(r)));
    } catch (err) {
      this.#fail('listCheckpoints', err);
    }
  }

  async storedVersions(table: TableName, ids: readonly string[]): Promise<Map<string, StoredVersion>> {
    const spec = this.#spec(table);
    if (spec.primaryKey.length !== 1)
      throw new DestinationError(`storedVersions: ${table} has a composite key`);
    if (ids.length === 0) return new Map();
    const pk = bqIdent(spec.primaryKey[0]!);
    const version = spec.versionColumn ? bqIdent(spec.versionColumn) : 'CAST(NULL AS TIMESTAMP)';
    try {
      const rows = await this.#run<{ id: string; version: unknown; hash: string | null }>(
        `SELECT ${pk} AS id, ${version} AS version, \`_content_hash\` AS hash FROM ${this.#table(table)}
         WHERE ${pk} IN UNNEST(@ids)${spec.tracksDeletion ? ' AND _deleted_at IS NULL' : ''}`,
        { ids: [...ids] },
        { ids: ['STRING'] } as unknown as Record<string, string>,
      );
      return new Map(
        rows.map((r) => [
          r.id,
          { version: r.version === null ? null : timestampText(r.version), contentHash: r.hash ?? null },
        ]),
      );
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
    const pk = bqIdent(spec.primaryKey[0]!);
    if (ids.length === 0) return 0;
    const list = `[${ids.map((id) => stringLiteral(id)).join(', ')}]`;
    return this.#markDeleted(
      table,
      `t.${pk} IN UNNEST(${list}) AND t._deleted_at IS NULL`,
      deletedAt,
      checkpoint,
    );
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
    const conditions = [`t._synced_at < ${timestampLiteral(since)}`, 't._deleted_at IS NULL'];
    if (within)
      conditions.push(`t.${bqIdent(rangeColumn(spec, within))} >= ${timestampLiteral(within.from)}`);
    if (unlessUnread) {
      // Not read is not gone: a row of a scope whose read is queued, running or failed keeps living.
      const column = bqIdent(unreadColumn(spec, unlessUnread));
      conditions.push(`NOT EXISTS (SELECT 1 FROM ${this.#table('_sync_state')} s
        WHERE s.stream = ${stringLiteral(unlessUnread.stream)} AND s.status != 'complete' AND s.scope = CAST(t.${column} AS STRING))`);
    }
    return this.#markDeleted(table, conditions.join(' AND '), deletedAt, checkpoint);
  }

  async #markDeleted(
    table: TableName,
    where: string,
    deletedAt: Date,
    checkpoint: CheckpointUpdate | undefined,
  ): Promise<number> {
    const checkpoints = checkpointList(checkpoint);
    // The count is taken inside the transaction, on the snapshot the UPDATE works on. `where` names the
    // table `t` (a guard's subquery must not mistake its own columns for the table's).
    const script = `DECLARE n INT64 DEFAULT 0;
BEGIN TRANSACTION;
SET n = (SELECT COUNT(*) FROM ${this.#table(table)} t WHERE ${where});
UPDATE ${this.#table(table)} t SET _deleted_at = ${timestampLiteral(deletedAt)} WHERE ${where};
${checkpoints.length > 0 ? `${checkpointMergeSql(this.#dataset, checkpoints, this.#clock())};\n` : ''}COMMIT TRANSACTION;
SELECT n;`;
    try {
      const [row] = await this.#retryConflicts(() => this.#run<{ n: number }>(script));
      return Number(row?.n ?? 0);
    } catch (err) {
      this.#fail(`markDeleted ${table}`, err);
    }
  }

  async cascadeDeletion(
    cascade: DeletionCascade,
    deletedAt: Date,
  ): Promise<{ marked: number; revived: number }> {
    const child = this.#deletable(cascade.child);
    const parent = this.#deletable(cascade.parent);
    const fk = bqIdent(cascadeColumn(child, cascade));
    const parents = (deleted: boolean) =>
      `SELECT ${bqIdent(parent.primaryKey[0]!)} FROM ${this.#table(parent.name)} WHERE _deleted_at IS ${deleted ? 'NOT ' : ''}NULL`;
    const markWhere = `_deleted_at IS NULL AND ${fk} IN (${parents(true)})`;
    const reviveWhere = `_deleted_at IS NOT NULL AND ${fk} IN (${parents(false)})`;
    const target = this.#table(child.name);
    const script = `DECLARE marked INT64 DEFAULT 0;
DECLARE revived INT64 DEFAULT 0;
BEGIN TRANSACTION;
SET marked = (SELECT COUNT(*) FROM ${target} WHERE ${markWhere});
UPDATE ${target} SET _deleted_at = ${timestampLiteral(deletedAt)} WHERE ${markWhere};
${
  cascade.revive
    ? `SET revived = (SELECT COUNT(*) FROM ${target} WHERE ${reviveWhere});
UPDATE ${target} SET _deleted_at = CAST(NULL AS TIMESTAMP) WHERE ${reviveWhere};
`
    : ''
}COMMIT TRANSACTION;
SELECT marked, revived;`;
    try {
      const [row] = await this.#retryConflicts(() => this.#run<{ marked: number; revived: number }>(script));
      return { marked: Number(row?.marked ?? 0), revived: Number(row?.revived ?? 0) };
    } catch (err) {
      this.#fail(`cascadeDeletion ${child.name}`, err);
    }
  }

  async staleThreads(verifiedBefore: Date, limit: number): Promise<string[]> {
    try {
      const rows = await this.#run<{ scope: string }>(
        `SELECT s.scope FROM ${this.#table('_sync_state')} s
         JOIN ${this.#table('tickets')} t ON CAST(t.ticket_number AS STRING) = s.scope AND t._deleted_at IS NULL
         WHERE s.stream = ${stringLiteral(THREAD_QUEUE_STREAM)} AND s.status = 'complete'
           AND s.updated_at < ${timestampLiteral(verifiedBefore)}
         ORDER BY s.updated_at, s.scope LIMIT ${Math.max(0, Math.floor(limit))}`,
      );
      return rows.map((r) => r.scope);
    } catch (err) {
      this.#fail('staleThreads', err);
    }
  }

  async freshness(): Promise<Freshness> {
    const text = (v: unknown) => (v === null || v === undefined ? null : timestampText(v));
    try {
      const [t] = await this.#run<{ live: number; oldest: unknown }>(
        `SELECT COUNT(*) AS live, MIN(_synced_at) AS oldest FROM ${this.#table('tickets')} WHERE _deleted_at IS NULL`,
      );
      const [m] = await this.#run<{ live: number; unread: number; oldest: unknown }>(
        `SELECT COUNT(*) AS live, COUNTIF(s.status IS NULL OR s.status != 'complete') AS unread,
           MIN(IF(s.status = 'complete', s.updated_at, NULL)) AS oldest
         FROM ${this.#table('tickets')} t
         LEFT JOIN ${this.#table('_sync_state')} s
           ON s.stream = ${stringLiteral(THREAD_QUEUE_STREAM)} AND s.scope = CAST(t.ticket_number AS STRING)
         WHERE t._deleted_at IS NULL`,
      );
      return Freshness.parse({
        tickets: { live: Number(t?.live ?? 0), oldestVerifiedAt: text(t?.oldest) },
        threads: {
          live: Number(m?.live ?? 0),
          unread: Number(m?.unread ?? 0),
          oldestVerifiedAt: text(m?.oldest),
        },
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
    const cols = SYSTEM_TABLES._sync_runs.columns;
    const params: Record<string, unknown> = {};
    const types: Record<string, string> = {};
    for (const c of cols) {
      const v = r[c.name as keyof SyncRunRecord];
      params[c.name] = c.type === 'timestamp' && typeof v === 'string' ? this.#bq.timestamp(v) : v;
      types[c.name] =
        { string: 'STRING', integer: 'INT64', timestamp: 'TIMESTAMP' }[c.type as string] ?? 'STRING';
    }
    const names = cols.map((c) => bqIdent(c.name));
    const sql = `MERGE ${this.#table('_sync_runs')} T USING (SELECT ${cols.map((c) => `@${c.name} AS ${bqIdent(c.name)}`).join(', ')}) S
ON T.run_id = S.run_id
WHEN MATCHED THEN UPDATE SET ${names
      .filter((n) => n !== '`run_id`')
      .map((n) => `${n} = S.${n}`)
      .join(', ')}
WHEN NOT MATCHED THEN INSERT (${names.join(', ')}) VALUES (${names.map((n) => `S.${n}`).join(', ')})`;
    try {
      await this.#retryConflicts(() => this.#run(sql, params, types));
    } catch (err) {
      this.#fail('recordRun', err);
    }
  }

  async listRuns(limit: number): Promise<SyncRunRecord[]> {
    try {
      const rows = await this.#run(
        `SELECT * FROM ${this.#table('_sync_runs')} ORDER BY started_at DESC, run_id LIMIT @limit`,
        { limit: Math.max(0, Math.floor(limit)) },
      );
      return rows.map((r) => SyncRunRecord.parse(normalize(r)));
    } catch (err) {
      this.#fail('listRuns', err);
    }
  }

  /** Runs a query (tests, status command); rows normalized (timestamps canonical, JSON parsed). */
  async query(sql: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>[]> {
    try {
      return (await this.#run(sql, params)).map(normalize);
    } catch (err) {
      this.#fail('query', err);
    }
  }

  async close(): Promise<void> {
    // The client holds no pooled connections to release.
  }
}

/** BigQuery row values → warehouse values: timestamps canonical strings, INT64 numbers. */
function normalize(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (
      v !== null &&
      typeof v === 'object' &&
      'value' in v &&
      typeof (v as { value: unknown }).value === 'string'
    )
      out[k] = timestampText(v);
    else if (typeof v === 'bigint') out[k] = Number(v);
    else out[k] = v;
  }
  return out;
}

function timestampText(v: unknown): string {
  const s =
    typeof v === 'object' && v !== null && 'value' in v ? String((v as { value: unknown }).value) : String(v);
  return canonicalTimestamp(s);
}
