import { createHash } from 'node:crypto';
import { type AuditCounts, type AuditSeed, addCounts, NO_AUDIT_COUNTS } from '../../schemas/audit.js';
import {
  AuditRecord,
  AuditVerdict,
  byText,
  type ColumnSpec,
  SYSTEM_TABLES,
  type TableSpec,
} from '../../schemas/warehouse.js';
import { limitClause, parsedRows, type SqlSession, statement } from './dialect.js';
import { upsert } from './ledger.js';

/*
 * The audit's reads and writes, written once against the dialect: its sample of a table (an order fixed by
 * a hash of each row's id and the run), its results in `_audit`, and their counts per table and verdict.
 */

/** Rows per upsert statement (a thread's or a window's page is at most 100). */
const AUDIT_CHUNK = 500;

/** Upserts audit results by (run_id, table_name, row_id). */
export async function recordAudit(session: SqlSession, records: readonly AuditRecord[]): Promise<void> {
  const parsed = records.map((r) => AuditRecord.parse(r));
  for (let i = 0; i < parsed.length; i += AUDIT_CHUNK)
    await upsert(session, 'recordAudit', SYSTEM_TABLES._audit, parsed.slice(i, i + AUDIT_CHUNK));
}

/**
 * Up to `limit` live rows of a table in the audit's order: by the MD5 of the row's id followed by `seed`
 * (the run id). The same on every warehouse and for every worker, a different sample every run, and
 * every row equally likely to come first. Each comes back with its seed column (a ticket number or a date).
 */
export async function auditSample(
  session: SqlSession,
  spec: TableSpec<unknown>,
  options: { seedColumn: string; seed: string; limit: number },
): Promise<AuditSeed[]> {
  const d = session.dialect;
  const column = auditSeedColumn(spec, options.seedColumn);
  const id = `CAST(t.${d.ident('id')} AS ${d.type('string')})`;
  const live = spec.tracksDeletion ? ` WHERE t.${d.ident('_deleted_at')} IS NULL` : '';
  const query = statement(
    d,
    (bind) => `SELECT ${id} AS id, t.${d.ident(column.name)} AS seed FROM ${d.table(spec.name)} t${live}
      ORDER BY ${d.md5Hex(`CONCAT(${id}, ${bind(options.seed, 'string')})`)}, ${id}${limitClause(options.limit)}`,
  );
  return parsedRows(session, 'auditSample', query, (row) =>
    auditSeedOf(column, String(row['id']), row['seed']),
  );
}

/** The seed column of an audit sample: an integer (a ticket number) or a timestamp (a date). */
export function auditSeedColumn(spec: TableSpec<unknown>, seedColumn: string): ColumnSpec {
  const column = spec.columns.find((c) => c.name === seedColumn);
  if (!column || (column.type !== 'integer' && column.type !== 'timestamp'))
    throw new Error(`auditSample: ${spec.name}.${seedColumn} is not an integer or timestamp column`);
  return column;
}

/** A sampled row as the audit starts from it: its id and its seed column's value. */
export function auditSeedOf(column: ColumnSpec, id: string, seed: unknown): AuditSeed {
  return {
    id,
    ticketNumber: column.type === 'integer' && typeof seed === 'number' ? seed : null,
    at: column.type === 'timestamp' && typeof seed === 'string' ? seed : null,
  };
}

/**
 * The audit's order of rows (the query's ORDER BY, in memory): by the MD5 hex of id then `seed`, then by
 * id, in byte order — for a warehouse that samples from a table read.
 */
export function auditOrder<R extends { id: string }>(rows: readonly R[], seed: string, limit: number): R[] {
  const keyed = rows.map((r) => ({ r, key: createHash('md5').update(`${r.id}${seed}`).digest('hex') }));
  keyed.sort((a, b) => byText(a.key, b.key) || byText(a.r.id, b.r.id));
  return keyed.slice(0, limit).map(({ r }) => r);
}

/** Which audit results to count: one run's, or every run's since an instant. */
export type AuditFilter = { readonly runId: string } | { readonly since: Date };

/** Counts of `_audit` rows per table by verdict (and how many were healed). */
export async function auditCounts(
  session: SqlSession,
  filter: AuditFilter,
): Promise<Record<string, AuditCounts>> {
  const d = session.dialect;
  const query = statement(d, (bind) => {
    const where =
      'runId' in filter
        ? `run_id = ${bind(filter.runId, 'string')}`
        : `checked_at >= ${bind(filter.since, 'timestamp')}`;
    return `SELECT table_name, verdict, COUNT(*) AS n, COUNT(CASE WHEN healed THEN 1 END) AS healed
      FROM ${d.table('_audit')} WHERE ${where} GROUP BY table_name, verdict ORDER BY table_name, verdict`;
  });
  const rows = await parsedRows(session, 'auditCounts', query, (row) => ({
    table: String(row['table_name']),
    verdict: AuditVerdict.parse(row['verdict']),
    n: Number(row['n']),
    healed: Number(row['healed']),
  }));
  return countsOf(rows);
}

/** One (table, verdict) group of `_audit` rows: how many, and how many of them healed. */
interface AuditGroup {
  readonly table: string;
  readonly verdict: AuditVerdict;
  readonly n: number;
  readonly healed: number;
}

/** Counts per table (keys in table order, as the query orders them) from its groups. */
function countsOf(groups: readonly AuditGroup[]): Record<string, AuditCounts> {
  const out: Record<string, AuditCounts> = {};
  for (const g of [...groups].sort((a, b) => byText(a.table, b.table)))
    out[g.table] = addCounts(out[g.table] ?? NO_AUDIT_COUNTS, { [g.verdict]: g.n, healed: g.healed });
  return out;
}

/** The columns of `_audit` auditCountsOfRows reads. */
export const AUDIT_COUNT_COLUMNS = ['run_id', 'table_name', 'verdict', 'healed', 'checked_at'] as const;

/**
 * auditCounts over `_audit` rows read whole (AUDIT_COUNT_COLUMNS), filtered as the query's WHERE: for a
 * warehouse where a table read of a small table bills nothing and a query bills 10 MB.
 */
export function auditCountsOfRows(
  rows: readonly Record<string, unknown>[],
  filter: AuditFilter,
): Record<string, AuditCounts> {
  const matches = (r: Record<string, unknown>) =>
    'runId' in filter
      ? r['run_id'] === filter.runId
      : Date.parse(String(r['checked_at'])) >= filter.since.getTime();
  return countsOf(
    rows.filter(matches).map((r) => ({
      table: String(r['table_name']),
      verdict: AuditVerdict.parse(r['verdict']),
      n: 1,
      healed: r['healed'] === true || r['healed'] === 'true' ? 1 : 0,
    })),
  );
}
