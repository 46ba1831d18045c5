/**
 * What BigQuery would bill for a statement under on-demand pricing, estimated from the sizes of the tables
 * it names (the emulator reports no bytes: its `numBytes` and `totalBytesProcessed` are always 0).
 *
 * Sizes are BigQuery's logical sizes (cloud.google.com/bigquery/docs/storage_overview, "data size
 * calculation"): STRING 2 + its UTF-8 bytes, INT64 / FLOAT64 / TIMESTAMP 8, BOOL 1, JSON the UTF-8 bytes of
 * its text, NULL 0. Billing (cloud.google.com/bigquery/pricing, docs/reference/standard-sql/dml-syntax,
 * "On-demand query size calculation"): a script bills each child statement as a job of its own; a
 * statement bills at least 10 MB per table it references and at least 10 MB in all; a SELECT bills the
 * columns it reads; INSERT bills what it reads (q); UPDATE, DELETE and a MERGE with an UPDATE or DELETE
 * clause bill q plus the whole target as it is when they start (t). Estimated here with whole tables for q
 * (no column pruning) and no partition pruning (today's scripts filter on no partition column): an upper
 * bound of the scanned size, exact for the floor. DDL, TRUNCATE and load jobs are free.
 */
import type { ChildStatement } from './bigquery-job-shapes.js';

export const MINIMUM_BILLED_BYTES = 10 * 1024 * 1024;

/** The logical size of one value of a column of BigQuery type `type` (REST type names included). */
export function logicalBytesOf(type: string, value: unknown): number {
  if (value === null || value === undefined) return 0;
  switch (type.toUpperCase()) {
    case 'STRING':
    case 'BYTES':
      return 2 + Buffer.byteLength(String(value), 'utf8');
    case 'JSON':
      return Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value), 'utf8');
    case 'BOOL':
    case 'BOOLEAN':
      return 1;
    case 'NUMERIC':
      return 16;
    case 'BIGNUMERIC':
      return 32;
    default:
      // INT64 / INTEGER, FLOAT64 / FLOAT, TIMESTAMP, DATE, DATETIME, TIME
      return 8;
  }
}

/** The logical size of the rows of a newline-delimited JSON upload, by the load job's schema. */
export function logicalBytesOfNdjson(
  fields: readonly { readonly name: string; readonly type?: string }[],
  text: string,
): number {
  let bytes = 0;
  for (const line of text.split('\n')) {
    if (line.trim().length === 0) continue;
    const record = JSON.parse(line) as Record<string, unknown>;
    for (const f of fields) bytes += logicalBytesOf(f.type ?? 'STRING', record[f.name]);
  }
  return bytes;
}

/** The SQL expression of a column's logical size in one row (the same rules, evaluated by the warehouse). */
export function logicalBytesSql(column: string, type: string): string {
  const c = `\`${column}\``;
  switch (type.toUpperCase()) {
    case 'STRING':
    case 'BYTES':
      return `IFNULL(2 + BYTE_LENGTH(${c}), 0)`;
    case 'JSON':
      return `IFNULL(BYTE_LENGTH(TO_JSON_STRING(${c})), 0)`;
    case 'BOOL':
    case 'BOOLEAN':
      return `IF(${c} IS NULL, 0, 1)`;
    default:
      return `IF(${c} IS NULL, 0, 8)`;
  }
}

/** One billed statement's estimate: the bytes it bills, and each table's share of them. */
export interface StatementBill {
  readonly bytes: number;
  /** Per table: what its reading (and, for the target, rewriting) adds; the floor lifts the total. */
  readonly byTable: ReadonlyMap<string, number>;
}

/**
 * The bytes a statement bills given the logical sizes of the tables (`sizeOf`: undefined for a name that
 * is not a known table, which is then not counted). A statement that names no table bills nothing.
 * Shares: a DML statement's whole bill goes to the table it writes; a read's to each table it reads.
 */
export function billStatement(
  statement: ChildStatement,
  sizeOf: (table: string) => number | undefined,
): StatementBill {
  if (statement.kind === 'truncate') return { bytes: 0, byTable: new Map() };
  const reads = statement.reads.filter((t) => sizeOf(t) !== undefined);
  const byTable = new Map<string, number>();
  let bytes = 0;
  for (const t of reads) {
    const q = Math.max(MINIMUM_BILLED_BYTES, sizeOf(t)!);
    byTable.set(t, (byTable.get(t) ?? 0) + q);
    bytes += q;
  }
  const target = statement.writes;
  if (target !== undefined && statement.billsTarget) {
    const t = sizeOf(target) ?? 0;
    byTable.set(target, (byTable.get(target) ?? 0) + t);
    bytes += t;
  }
  if (target !== undefined && sizeOf(target) !== undefined && !reads.includes(target))
    // An INSERT names its target: the floor per table referenced applies to it too.
    bytes += MINIMUM_BILLED_BYTES;
  if (bytes === 0) return { bytes: 0, byTable: new Map() };
  bytes = Math.max(MINIMUM_BILLED_BYTES, bytes);
  if (target !== undefined) return { bytes, byTable: new Map([[target, bytes]]) };
  return { bytes, byTable };
}
