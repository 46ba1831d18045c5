import type { AuditCounts, AuditSeed } from '../../schemas/audit.js';
import type {
  AuditRecord,
  Freshness,
  OpenRejections,
  ReconciliationRecord,
  SchemaChangeRecord,
  SyncRunRecord,
  TableName,
} from '../../schemas/warehouse.js';
import type { Bookkeeping } from '../destination.js';
import type { DestinationSettings } from '../settings.js';
import { type AuditFilter, auditCounts, auditSample, recordAudit } from './audit.js';
import type { SqlSession } from './dialect.js';
import { hasLedger, listReconciliation, listRuns, recordReconciliation, recordRun } from './ledger.js';
import { listSchemaChanges, type SchemaChangeFilter } from './schema-changes.js';
import { freshness, openRejections, staleThreads } from './state-reads.js';

/**
 * The bookkeeping tables over a SQL warehouse: the same statements on every warehouse (sql/ledger.ts,
 * sql/audit.ts, sql/schema-changes.ts, sql/state-reads.ts). A warehouse that reads some of them cheaper
 * otherwise composes this one (bigquery/bookkeeping.ts).
 */
export class SqlBookkeeping implements Bookkeeping {
  readonly #session: SqlSession;
  readonly #settings: DestinationSettings;

  constructor(session: SqlSession, settings: DestinationSettings) {
    this.#session = session;
    this.#settings = settings;
  }

  async recordRun(run: SyncRunRecord): Promise<void> {
    await recordRun(this.#session, run);
  }

  listRuns(limit: number): Promise<SyncRunRecord[]> {
    return listRuns(this.#session, limit);
  }

  hasLedger(): Promise<boolean> {
    return hasLedger(this.#session);
  }

  async recordReconciliation(rows: readonly ReconciliationRecord[]): Promise<void> {
    await recordReconciliation(this.#session, rows);
  }

  listReconciliation(runId?: string): Promise<ReconciliationRecord[]> {
    return listReconciliation(this.#session, runId);
  }

  auditSample(table: TableName, seedColumn: string, seed: string, limit: number): Promise<AuditSeed[]> {
    return auditSample(this.#session, this.#settings.spec(table), { seedColumn, seed, limit });
  }

  /** `_synced_at` is moved by each batch's merge: nothing to lay over. */
  async recordAudit(rows: readonly AuditRecord[]): Promise<void> {
    await recordAudit(this.#session, rows);
  }

  auditCounts(filter: AuditFilter): Promise<Record<string, AuditCounts>> {
    return auditCounts(this.#session, filter);
  }

  openRejections(): Promise<OpenRejections[]> {
    return openRejections(this.#session);
  }

  listSchemaChanges(filter?: SchemaChangeFilter): Promise<SchemaChangeRecord[]> {
    return listSchemaChanges(this.#session, filter);
  }

  staleThreads(verifiedBefore: Date, limit: number): Promise<string[]> {
    return staleThreads(this.#session, verifiedBefore, limit);
  }

  freshness(): Promise<Freshness> {
    return freshness(this.#session);
  }
}
