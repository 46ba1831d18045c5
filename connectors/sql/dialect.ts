import type { ColumnType } from '../../schemas/warehouse.js';
import type { SqlDialect } from '../../schemas/warehouse-views.js';
import type { WithErrorMapping } from '../errors.js';

/** The type of a bound value: a column type, or a list of strings (ids). */
export type ParamType = ColumnType | 'string_list';
export type ParamValue = string | number | boolean | Date | null | readonly string[];

/** Binds a value into a statement and returns the SQL that stands for it there (a placeholder, a literal). */
export type Bind = (value: ParamValue, type: ParamType) => string;

/**
 * The SQL dialect of one warehouse, beyond what the BI views need (SqlDialect): how a bound value is
 * written, list membership, the warehouse's clock and the upsert flavour. The bookkeeping reads and writes
 * (sql/state-reads.ts, sql/ledger.ts, sql/deletions.ts) are written once against it.
 */
export interface WarehouseDialect extends SqlDialect {
  /**
   * ` AND <alias.>workspace_id = '<workspace>'` in shared tables, '' in a schema of the workspace's own: the
   * condition that keeps an UPDATE of `target` (the table itself; `table` is what a statement reads, the
   * workspace's rows) to the destination's rows.
   */
  ownRows(alias?: string): string;
  /** A key as `target` holds rows by it (ON CONFLICT, a join of staged rows): `workspace_id` first in shared tables. */
  storedKey(key: readonly string[]): readonly string[];
  /** The placeholder of a statement's `index`-th (from 0) bound value. */
  placeholder(index: number, type: ParamType): string;
  /** True when `expr` is one of the strings of `list` (a bound `string_list`). */
  isIn(expr: string, list: string): string;
  /** The warehouse's clock in a statement (PostgreSQL: the transaction's start). */
  readonly now: string;
  /**
   * The MD5 of a text as 32 lowercase hex digits — the same value on every warehouse, so an order by it
   * (the audit's sample) is the same wherever the rows live.
   */
  md5Hex(text: string): string;
  /**
   * One statement inserting `rows` (each the SQL of its values, in `columns` order) into `table`, or, where
   * a row with the same `key` exists, overwriting its other columns.
   */
  upsert(
    table: string,
    key: readonly string[],
    columns: readonly string[],
    rows: readonly (readonly string[])[],
  ): string;
  /**
   * One statement upserting the rows of `source` (a SELECT whose columns are `columns`) into `table` by
   * `key`: a new key is inserted as it comes; a stored row takes `set` where `when` holds. `update` gets the
   * name the dialect gives the incoming row, and writes SQL over it and the stored row `T`.
   */
  mergeSource(
    table: string,
    key: readonly string[],
    columns: readonly string[],
    source: string,
    update: (incoming: string) => MergeUpdate,
  ): string;
}

/** How a stored row is updated by an incoming one (see WarehouseDialect.mergeSource). */
export interface MergeUpdate {
  /** Column → its new value (SQL over `T`, the stored row, and the incoming row). */
  readonly set: Readonly<Record<string, string>>;
  readonly when: string;
}

export interface BoundValue {
  readonly value: ParamValue;
  readonly type: ParamType;
}

/** A statement and the values of its placeholders, in order. */
export interface Statement {
  readonly sql: string;
  readonly values: readonly BoundValue[];
}

/** Builds a statement; `bind` puts a value behind a placeholder of the dialect. */
export function statement(dialect: WarehouseDialect, build: (bind: Bind) => string): Statement {
  const values: BoundValue[] = [];
  const sql = build((value, type) => dialect.placeholder(values.push({ value, type }) - 1, type));
  return { sql, values };
}

export type Row = Record<string, unknown>;

/** How statements run on one warehouse. */
export interface SqlSession {
  readonly dialect: WarehouseDialect;
  /** Every operation of the destination runs inside it: what it throws leaves mapped, without credentials. */
  readonly withErrorMapping: WithErrorMapping;
  /**
   * The rows of a query, normalized alike on every warehouse: timestamps canonical strings (see
   * canonicalTimestamp), integers numbers, JSON parsed.
   */
  rows(query: Statement): Promise<Row[]>;
  /**
   * A statement that writes (an upsert), committed on its own; retried where the warehouse aborts one of
   * two concurrent writers (BigQuery).
   */
  execute(write: Statement): Promise<void>;
  close(): Promise<void>;
}

/** A LIMIT clause for a caller's count (never negative, never fractional). */
export function limitClause(limit: number | undefined): string {
  return limit === undefined ? '' : ` LIMIT ${Math.max(0, Math.floor(limit))}`;
}

/** The rows of a query, each parsed: a row the schema refuses fails the operation as a query error does. */
export function parsedRows<T>(
  session: SqlSession,
  context: string,
  query: Statement,
  parse: (row: Row) => T,
): Promise<T[]> {
  return session.withErrorMapping(context, async () => (await session.rows(query)).map(parse));
}

/**
 * Whether a failed read failed because its table or view does not exist (PostgreSQL: "does not exist",
 * BigQuery: "Not found"): how a reader learns that without a catalog query, which differs per warehouse and
 * needs its own grants.
 */
export function isMissingRelation(err: unknown): boolean {
  return /does not exist|not found/i.test(String((err as Error)?.message ?? err));
}
