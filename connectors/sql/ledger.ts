import { ReconciliationRecord, SYSTEM_TABLES, SyncRunRecord } from '../../schemas/warehouse.js';
import {
  isMissingRelation,
  limitClause,
  parsedRows,
  type Row,
  type SqlSession,
  statement,
} from './dialect.js';

/*
 * The run ledger (`_sync_runs`) and the reconciliation results (`_reconciliation`), written once against the
 * dialect: an upsert by the table's key, and reads in a fixed order.
 */

type LedgerTable = (typeof SYSTEM_TABLES)['_sync_runs' | '_reconciliation' | '_audit'];

/**
 * Upserts records into a ledger table by its key, in one statement. Records with the same key: the last
 * wins (one statement cannot write a key twice; the last is what upserting them one by one leaves).
 */
export function upsert(
  session: SqlSession,
  context: string,
  table: LedgerTable,
  records: readonly Row[],
): Promise<void> {
  const d = session.dialect;
  const keyOf = (r: Row) => table.primaryKey.map((k) => String(r[k])).join('\u0000');
  const unique = [...new Map(records.map((r) => [keyOf(r), r])).values()];
  const write = statement(d, (bind) =>
    d.upsert(
      table.name,
      table.primaryKey,
      table.columns.map((c) => c.name),
      unique.map((r) =>
        table.columns.map((c) => bind((r[c.name] ?? null) as string | number | null, c.type)),
      ),
    ),
  );
  return session.withErrorMapping(context, () => session.execute(write));
}

const RUN_COLUMNS = Object.keys(SyncRunRecord.shape);
const RECONCILIATION_COLUMNS = Object.keys(ReconciliationRecord.shape);

/** Upserts a run record by run_id. */
export async function recordRun(session: SqlSession, run: SyncRunRecord): Promise<void> {
  await upsert(session, 'recordRun', SYSTEM_TABLES._sync_runs, [SyncRunRecord.parse(run)]);
}

/**
 * Whether the ledger table exists, found by reading it (no catalog query: INFORMATION_SCHEMA differs per
 * warehouse and needs its own grants). Only "no such table" means no; any other failure is thrown.
 */
export async function hasLedger(session: SqlSession): Promise<boolean> {
  const d = session.dialect;
  try {
    await session.rows(statement(d, () => `SELECT 1 AS one FROM ${d.table('_sync_runs')} LIMIT 1`));
    return true;
  } catch (err) {
    if (isMissingRelation(err)) return false;
    throw err;
  }
}

/** Most recent runs first (by started_at). */
export async function listRuns(session: SqlSession, limit: number): Promise<SyncRunRecord[]> {
  const d = session.dialect;
  const query = statement(
    d,
    () => `SELECT ${RUN_COLUMNS.map((c) => d.ident(c)).join(', ')} FROM ${d.table('_sync_runs')}
      ORDER BY started_at DESC, run_id${limitClause(limit)}`,
  );
  return parsedRows(session, 'listRuns', query, (row) => SyncRunRecord.parse(row));
}

/** Upserts reconciliation results by (run_id, metric, period). */
export async function recordReconciliation(
  session: SqlSession,
  records: readonly ReconciliationRecord[],
): Promise<void> {
  const parsed = records.map((r) => ReconciliationRecord.parse(r));
  if (parsed.length === 0) return;
  await upsert(session, 'recordReconciliation', SYSTEM_TABLES._reconciliation, parsed);
}

/** The reconciliation rows of one run, or of the latest run that has any (by checked_at). */
export async function listReconciliation(
  session: SqlSession,
  runId: string | undefined,
): Promise<ReconciliationRecord[]> {
  const d = session.dialect;
  const table = d.table('_reconciliation');
  const query = statement(
    d,
    (bind) => `SELECT ${RECONCILIATION_COLUMNS.map((c) => d.ident(c)).join(', ')} FROM ${table}
      WHERE run_id = COALESCE(${bind(runId ?? null, 'string')},
        (SELECT run_id FROM ${table} ORDER BY checked_at DESC, run_id DESC LIMIT 1))
      ORDER BY metric, period`,
  );
  return parsedRows(session, 'listReconciliation', query, (row) => ReconciliationRecord.parse(row));
}
