import { z } from 'zod';
import type { TableName } from './table-names.js';
import type { TableSpec, WarehouseRow } from './table-spec.js';
import { type RowInputs, tableSpecOf } from './tables.js';
import { compareVersions } from './values.js';

/**
 * Rows on their way into a destination: inputs mapped and validated against their table (a bad row named by
 * table, id and field), keyed and de-duplicated by primary key, and the version and content hash a writer
 * compares with what the warehouse already holds.
 */

/** A row that breaks its table's schema. Names the table, the row's id and the field. */
export class WarehouseRowError extends Error {
  override readonly name = 'WarehouseRowError';
  constructor(
    readonly table: TableName,
    readonly rowId: string,
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${table} row ${rowId}: field ${field}: ${problem}`);
  }
}

/**
 * Maps inputs to rows and validates each against the table's row schema (the model's, or `spec` when a
 * destination was given another). Throws WarehouseRowError on the first bad row (the whole batch is
 * rejected before anything is written).
 */
export function toValidatedRows<T extends TableName>(
  table: T,
  inputs: readonly RowInputs[T][],
  spec: TableSpec<RowInputs[T]> | TableSpec<unknown> = tableSpecOf(table),
): WarehouseRow[] {
  const rows: WarehouseRow[] = [];
  for (const input of inputs) {
    let row: WarehouseRow;
    try {
      row = spec.toRow(input);
    } catch (err) {
      throw new WarehouseRowError(table, guessId(input), '(row)', (err as Error).message);
    }
    const parsed = spec.rowSchema.safeParse(row);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const id = spec.primaryKey.map((k) => String(row[k] ?? '?')).join('/');
      throw new WarehouseRowError(table, id, issue.path.join('.') || '(row)', issue.message);
    }
    rows.push(row);
  }
  return rows;
}

/**
 * What a warehouse holds for one row, as `storedVersions` returns it: the version (canonical ISO string;
 * null for content-rule tables) and the content hash (null for rows written before hashes existed). A
 * writer compares both with the incoming item to decide what to rewrite.
 */
export const StoredVersion = z.object({
  version: z.string().nullable(),
  contentHash: z.string().nullable(),
});
export type StoredVersion = z.infer<typeof StoredVersion>;

/**
 * The `_content_hash` an input is stored with under `spec`: by default the model's, with no column policy;
 * a writer passes its destination's (`Destination.writtenSpec`: the policy it writes with applied), so it
 * compares like with like against `storedVersions`.
 */
export function contentHashOf<T extends TableName>(
  table: T,
  input: RowInputs[T],
  spec: TableSpec<unknown> = tableSpecOf(table),
): string {
  return spec.toRow(input)['_content_hash'] as string;
}

function guessId(input: unknown): string {
  const i = input as { item?: { id?: unknown }; id?: unknown } | null;
  return String(i?.item?.id ?? i?.id ?? '?');
}

/** Primary-key string of a row (components joined by U+001F), used for de-duplication and ordering. */
export function rowKey(spec: TableSpec<unknown>, row: WarehouseRow): string {
  return spec.primaryKey.length === 1
    ? String(row[spec.primaryKey[0]!])
    : spec.primaryKey.map((k) => String(row[k])).join('\u001f');
}

/**
 * Keeps one row per primary key (the one with the greatest version; the last one for content-rule tables),
 * so a merge never touches a target row twice in one statement.
 */
export function dedupeRows(spec: TableSpec<unknown>, rows: readonly WarehouseRow[]): WarehouseRow[] {
  const byKey = new Map<string, WarehouseRow>();
  const version = spec.versionColumn;
  for (const row of rows) {
    const key = rowKey(spec, row);
    const prev = byKey.get(key);
    if (
      prev === undefined ||
      version === null ||
      compareVersions(row[version] as string | null, prev[version] as string | null) >= 0
    )
      byKey.set(key, row);
  }
  return [...byKey.values()];
}
