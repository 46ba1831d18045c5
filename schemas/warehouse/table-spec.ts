import { hash } from 'node:crypto';
import { z } from 'zod';
import { type ColumnSpec, column, type DeriveOptions, deriveColumns } from './derive.js';
import type { TableName } from './table-names.js';
import { canonicalJson, storableJson, toColumnValue } from './values.js';
import { WORKSPACE_COLUMN } from './workspace-column.js';

/**
 * The TableSpec machinery: what a table is (key, merge rule, columns, layout), the bookkeeping columns every
 * data table gets, the row schema derived from the columns, and `_content_hash`, computed in one place for
 * every table. `apiTable` builds the spec of a table that mirrors an API item.
 */

/**
 * How a table decides whether an incoming row replaces the stored one. Content is compared through
 * `_content_hash` (see rowContentHash), so a change the source makes without moving its version — a field
 * only `_raw` has, a value fixed in place — still reaches the warehouse.
 *  - `version`: the incoming row wins when its version column is strictly greater, or equal with a
 *    different content hash (a stored NULL hash — a row from before hashes — counts as different); an older
 *    version never overwrites a newer one;
 *  - `content`: no source version exists; the incoming row wins when its content hash differs (identical
 *    content = no-op).
 */
export type MergeRule = { readonly kind: 'version'; readonly column: string } | { readonly kind: 'content' };

export interface TableSpec<Input = unknown> {
  readonly name: TableName;
  readonly description: string;
  readonly primaryKey: readonly string[];
  readonly merge: MergeRule;
  /** Version column name (for `storedVersions`), or null for content-rule tables. */
  readonly versionColumn: string | null;
  /** Whether the table has `_deleted_at` (rows can be marked deleted, never hard-deleted). */
  readonly tracksDeletion: boolean;
  /**
   * All columns in table order: typed columns, then `_raw`, `_synced_at`, `_deleted_at` (if tracked),
   * `_content_hash` (last, where an additive migration puts it in tables created before it existed).
   */
  readonly columns: readonly ColumnSpec[];
  /**
   * Zod schema of one warehouse row (all columns but `_synced_at`/`_deleted_at`, which the destination sets;
   * `_content_hash` included).
   */
  readonly rowSchema: z.ZodObject;
  /** Zod schema of the input accepted by `toRow`. */
  readonly inputSchema: z.ZodType<Input>;
  /** Maps an input to a row, `_content_hash` included (not validated; `toValidatedRows` does that). */
  toRow(input: Input): WarehouseRow;
  /** Secondary indexes BI queries need (PostgreSQL); each an ordered list of columns. */
  readonly indexes: readonly (readonly string[])[];
  /** BigQuery layout: daily partitioning column (timestamp) and up to four clustering columns. */
  readonly partitionBy: string | null;
  readonly clusterBy: readonly string[];
}

/** A warehouse row: column name → value (timestamps canonical strings, JSON as JS values). */
export type WarehouseRow = Record<string, unknown>;

/** Input of an API-backed table: the parsed item and the JSON object as received. */
export interface ApiRowInput<T> {
  readonly item: T;
  readonly raw: unknown;
}

const apiInput = <T extends z.ZodType>(item: T) => z.object({ item, raw: z.unknown() });

const RAW = column(
  '_raw',
  'json',
  false,
  'The item as received from the API (forward compatibility: fields added later are here first), with the fields SYNC_COLUMN_POLICY names hashed or removed.',
);
const SYNCED_AT = column(
  '_synced_at',
  'timestamp',
  false,
  'When a sync last received this row from the source (set on every write, also when the content did not change).',
);
const DELETED_AT = column(
  '_deleted_at',
  'timestamp',
  true,
  'When the sync found the row gone from the source (null while it exists). Rows are never hard-deleted.',
);
const CONTENT_HASH = column(
  '_content_hash',
  'string',
  true,
  "SHA-256 (hex) of the row's content as stored (after the column policy): its typed columns and _raw as canonical JSON (keys sorted). The merge compares it to see a change the version does not show; null on rows written before the column existed (they count as changed).",
);

/**
 * Columns that are bookkeeping, not content: left out of the content hash (`workspace_id`, which shared
 * tables add, too: a row's hash is the same in either layout).
 */
const NOT_CONTENT = new Set(['_synced_at', '_deleted_at', '_content_hash', WORKSPACE_COLUMN]);

/** `_content_hash` of a row: SHA-256 hex of the canonical JSON of its data columns and `_raw`. */
export function rowContentHash(row: WarehouseRow): string {
  const content: WarehouseRow = {};
  for (const [k, v] of Object.entries(row)) if (!NOT_CONTENT.has(k)) content[k] = v;
  // The one-shot hash: no Hash object per row.
  return hash('sha256', canonicalJson(content), 'hex');
}

function valueAt(item: unknown, path: readonly string[]): unknown {
  let v: unknown = item;
  for (const key of path) {
    if (v === null || v === undefined || typeof v !== 'object') return null;
    v = (v as Record<string, unknown>)[key];
  }
  return v === undefined ? null : v;
}

const TS_CANONICAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function zodForColumn(c: ColumnSpec): z.ZodType {
  let base: z.ZodType;
  switch (c.type) {
    case 'string':
      base = z.string();
      break;
    case 'integer':
      base = z.number().int();
      break;
    case 'float':
      base = z.number();
      break;
    case 'boolean':
      base = z.boolean();
      break;
    case 'timestamp':
      base = z.string().regex(TS_CANONICAL, 'expected an ISO 8601 instant');
      break;
    case 'json':
      base = c.nullable ? z.unknown() : z.unknown().refine((v) => v !== null && v !== undefined, 'required');
      break;
  }
  return c.nullable ? base.nullable() : base;
}

export interface ApiTableDef<T extends z.ZodObject> {
  name: TableName;
  description: string;
  schema: T;
  primaryKey: readonly string[];
  merge: MergeRule;
  tracksDeletion: boolean;
  derive: DeriveOptions;
  /** Columns computed from the item beyond its fields (e.g. a version), appended after the derived ones. */
  computed?: readonly (ColumnSpec & { compute: (item: z.infer<T>) => unknown })[];
  indexes: readonly (readonly string[])[];
  partitionBy: string | null;
  clusterBy: readonly string[];
}

export function tableSpec<Input>(
  base: Omit<TableSpec<Input>, 'columns' | 'rowSchema' | 'versionColumn' | 'toRow'>,
  dataColumns: readonly ColumnSpec[],
  rowOf: (input: Input) => WarehouseRow,
): TableSpec<Input> {
  const columns = [
    ...dataColumns,
    RAW,
    SYNCED_AT,
    ...(base.tracksDeletion ? [DELETED_AT] : []),
    CONTENT_HASH,
  ];
  const rowColumns = [...dataColumns, RAW, CONTENT_HASH];
  const rowSchema = z.object(Object.fromEntries(rowColumns.map((c) => [c.name, zodForColumn(c)])));
  const names = new Set(columns.map((c) => c.name));
  for (const k of [...base.primaryKey, ...base.clusterBy, ...base.indexes.flat()])
    if (!names.has(k)) throw new Error(`warehouse: ${base.name} refers to unknown column ${k}`);
  if (base.merge.kind === 'version' && !names.has(base.merge.column))
    throw new Error(`warehouse: ${base.name} version column ${base.merge.column} is not a column`);
  return {
    ...base,
    columns,
    rowSchema,
    versionColumn: base.merge.kind === 'version' ? base.merge.column : null,
    // Hashed here, once for every table, so no table can forget it and writers compare like with like.
    toRow: (input) => {
      const row = rowOf(input);
      row['_content_hash'] = rowContentHash(row);
      return row;
    },
  };
}

export function apiTable<T extends z.ZodObject>(def: ApiTableDef<T>): TableSpec<ApiRowInput<z.infer<T>>> {
  const derived = deriveColumns(def.name, def.schema, def.derive);
  const computed = def.computed ?? [];
  const dataColumns: ColumnSpec[] = [
    ...derived,
    ...computed.map(({ compute: _compute, ...c }) => c as ColumnSpec),
  ];
  return tableSpec<ApiRowInput<z.infer<T>>>(
    {
      name: def.name,
      description: def.description,
      primaryKey: def.primaryKey,
      merge: def.merge,
      tracksDeletion: def.tracksDeletion,
      inputSchema: apiInput(def.schema) as unknown as z.ZodType<ApiRowInput<z.infer<T>>>,
      indexes: def.indexes,
      partitionBy: def.partitionBy,
      clusterBy: def.clusterBy,
    },
    dataColumns,
    (input) => {
      const row: WarehouseRow = {};
      for (const c of derived) row[c.name] = toColumnValue(c.type, valueAt(input.item, c.path ?? [c.name]));
      for (const c of computed) row[c.name] = toColumnValue(c.type, c.compute(input.item));
      row['_raw'] = storableJson(input.raw ?? input.item);
      return row;
    },
  );
}

/**
 * The warehouse table a stream fills, as the table catalog (schemas/warehouse/tables.ts) builds it: the
 * spec's declaration without its name, which is the stream's `table`.
 */
export type StreamTable<T extends z.ZodObject = z.ZodObject> = Omit<ApiTableDef<T>, 'name'>;
