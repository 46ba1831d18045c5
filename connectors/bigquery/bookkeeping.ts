import type { AuditCounts, AuditSeed } from '../../schemas/audit.js';
import {
  type AuditRecord,
  canonicalTimestamp,
  type Freshness,
  type OpenRejections,
  type ReconciliationRecord,
  type SchemaChangeRecord,
  type SyncRunRecord,
  type TableName,
} from '../../schemas/warehouse.js';
import type { Bookkeeping } from '../destination.js';
import type { DestinationSettings } from '../settings.js';
import {
  AUDIT_COUNT_COLUMNS,
  type AuditFilter,
  auditCountsOfRows,
  auditOrder,
  auditSeedColumn,
  auditSeedOf,
} from '../sql/audit.js';
import type { SqlBookkeeping } from '../sql/bookkeeping.js';
import type { SchemaChangeFilter } from '../sql/schema-changes.js';
import type { BigQuerySession } from './session.js';
import { laySightingsOver } from './sightings.js';
import type { StagedBigQueryWriter } from './staged-writer.js';
import {
  openRejectionsByTableReads,
  schemaChangesByTableRead,
  staleThreadsByTableReads,
} from './state-reads.js';
import { liveRowsByTableRead, MINIMUM_BILLED_BYTES, TABLE_READ_MAX_ROWS } from './table-reads.js';

/**
 * The bookkeeping tables on BigQuery: ledger entries and verdicts staged with the pages (one statement each
 * would break a table's DML limits), small tables read without a query (each query bills 10 MB at least),
 * and what this process staged merged before a read that must see it. The rest is the SQL every warehouse
 * runs (`sql`, SqlBookkeeping).
 */
export class BigQueryBookkeeping implements Bookkeeping {
  readonly #session: BigQuerySession;
  readonly #writer: StagedBigQueryWriter;
  readonly #settings: DestinationSettings;
  readonly #sql: SqlBookkeeping;

  constructor(
    session: BigQuerySession,
    writer: StagedBigQueryWriter,
    settings: DestinationSettings,
    sql: SqlBookkeeping,
  ) {
    this.#session = session;
    this.#writer = writer;
    this.#settings = settings;
    this.#sql = sql;
  }

  recordRun(run: SyncRunRecord): Promise<void> {
    return this.#writer.recordRun(run);
  }

  async listRuns(limit: number): Promise<SyncRunRecord[]> {
    await this.#writer.flushOwn();
    return this.#sql.listRuns(limit);
  }

  hasLedger(): Promise<boolean> {
    return this.#sql.hasLedger();
  }

  recordReconciliation(rows: readonly ReconciliationRecord[]): Promise<void> {
    return this.#sql.recordReconciliation(rows);
  }

  async listReconciliation(runId?: string): Promise<ReconciliationRecord[]> {
    await this.#writer.flushOwn();
    return this.#sql.listReconciliation(runId);
  }

  /**
   * The audit's sample by a table read of ids and seeds, ordered in memory as the query orders it (auditOrder):
   * four queries a run (10 MB each) less. A table too large to read is queried.
   */
  async auditSample(table: TableName, seedColumn: string, seed: string, limit: number): Promise<AuditSeed[]> {
    const column = auditSeedColumn(this.#settings.spec(table), seedColumn);
    const rows = await liveRowsByTableRead(
      this.#session,
      this.#settings,
      table,
      ['id', column.name],
      'auditSample',
    );
    if (rows === null) return this.#sql.auditSample(table, seedColumn, seed, limit);
    const seeds = rows.map((r) => ({ id: String(r['id']), seed: r[column.name] }));
    return auditOrder(seeds, seed, limit).map((r) => auditSeedOf(column, r.id, r.seed));
  }

  recordAudit(rows: readonly AuditRecord[]): Promise<void> {
    return this.#writer.recordAudit(rows);
  }

  /**
   * Every process's staged verdicts are merged first (the audit's units may have run anywhere); then, while
   * `_audit` is under 10 MiB, counted from a table read (a query bills the 10 MB floor every run), else
   * queried (clustered by its key, from `run_id` on, which prunes a run's).
   */
  async auditCounts(filter: AuditFilter): Promise<Record<string, AuditCounts>> {
    await this.#writer.flush();
    const rows = await this.#session.withErrorMapping('auditCounts', async () =>
      (await this.#session.tableBytes('_audit')) <= MINIMUM_BILLED_BYTES
        ? this.#session.readTableUpTo('_audit', AUDIT_COUNT_COLUMNS, TABLE_READ_MAX_ROWS)
        : null,
    );
    return rows === null ? this.#sql.auditCounts(filter) : auditCountsOfRows(rows, filter);
  }

  /** By a table read of `_rejected`, not flushed first: staged items count from the next flush on. */
  openRejections(): Promise<OpenRejections[]> {
    return this.#session.withErrorMapping('openRejections', () => openRejectionsByTableReads(this.#session));
  }

  /**
   * By table reads, not flushed first (staleThreadsByTableReads): the rolling re-read lists several times a
   * run, each time after it queued some threads. A query named `_sync_state` and `tickets` (20 MB at least)
   * and had to flush this process's staged queue entries first; the table reads see every process's.
   */
  staleThreads(verifiedBefore: Date, limit: number): Promise<string[]> {
    return this.#session.withErrorMapping('staleThreads', () =>
      staleThreadsByTableReads(this.#session, verifiedBefore, limit),
    );
  }

  /**
   * With the tickets' sightings not folded yet laid over `_synced_at` (by table reads: the `plan` command
   * reads this and must not write), so the oldest ticket is the one least recently seen.
   */
  async freshness(): Promise<Freshness> {
    await this.#writer.flushOwn();
    const stored = await this.#sql.freshness();
    const rows = await liveRowsByTableRead(
      this.#session,
      this.#settings,
      'tickets',
      ['id', '_synced_at'],
      'freshness',
    );
    if (rows === null || rows.length === 0) return stored;
    const byId = new Map(rows.map((r) => [String(r['id']), r]));
    await laySightingsOver(this.#session, this.#settings, 'tickets', byId);
    const oldest = [...byId.values()].reduce(
      (min, r) => Math.min(min, Date.parse(String(r['_synced_at']))),
      Number.POSITIVE_INFINITY,
    );
    if (!Number.isFinite(oldest)) return stored;
    return {
      ...stored,
      tickets: { ...stored.tickets, oldestVerifiedAt: canonicalTimestamp(new Date(oldest).toISOString()) },
    };
  }

  /** By a table read of `_schema_changes` (small), after this process's own sightings are merged. */
  async listSchemaChanges(filter?: SchemaChangeFilter): Promise<SchemaChangeRecord[]> {
    await this.#writer.flushOwn();
    return this.#session.withErrorMapping('listSchemaChanges', () =>
      schemaChangesByTableRead(this.#session, filter),
    );
  }
}
