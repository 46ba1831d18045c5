import type { z } from 'zod';
import {
  byText,
  type CheckpointUpdate,
  type ColumnSpec,
  dedupeRows,
  RejectedItem,
  SchemaChangeSighting,
  storableJson,
  storableString,
  type TableSpec,
  toValidatedRows,
  type WarehouseRow,
} from '../schemas/warehouse.js';
import type { WriteBatch, WriteResult } from './destination.js';
import { DestinationError } from './errors.js';

/*
 * What a write batch becomes before any SQL, the same on every destination: its rows validated and
 * de-duplicated, its checkpoints and rejected items as sorted lists, the columns it stages.
 */

/** The rows of a batch validated against `spec` (an invalid row rejects the whole batch) and deduplicated. */
export function batchRows(spec: TableSpec<unknown>, batch: WriteBatch): WarehouseRow[] {
  return dedupeRows(spec, toValidatedRows(batch.table, batch.rows, spec));
}

/** Columns staged per batch: the row's columns (`_synced_at` and `_deleted_at` are set by the merge). */
export function stagedColumns(spec: TableSpec<unknown>): ColumnSpec[] {
  return spec.columns.filter((c) => c.name !== '_synced_at' && c.name !== '_deleted_at');
}

/** The checkpoints of a batch as a list, deduplicated by (stream, scope) (the last wins), in key order. */
export function checkpointList(checkpoint: WriteBatch['checkpoint']): CheckpointUpdate[] {
  if (!checkpoint) return [];
  const list = Array.isArray(checkpoint)
    ? (checkpoint as readonly CheckpointUpdate[])
    : [checkpoint as CheckpointUpdate];
  const byKey = new Map(list.map((cp) => [`${cp.stream}\u0000${cp.scope}`, cp]));
  return [...byKey.entries()].sort(([a], [b]) => byText(a, b)).map(([, cp]) => cp);
}

/**
 * Items of a batch validated with `schema`, made storable (like rows: no U+0000, no lone surrogates),
 * deduplicated on the key their table is upserted by (the last wins: one statement cannot upsert a key twice)
 * and sorted by it, so concurrent writers lock entries in one order. An invalid item throws a
 * DestinationError naming its position and field, never its content (raw items may hold anything).
 */
function keyedList<T>(
  items: readonly unknown[],
  schema: z.ZodType<T>,
  what: string,
  storable: (item: T) => T,
  keyOf: (item: T) => readonly string[],
): T[] {
  const byKey = new Map<string, T>();
  items.forEach((item, i) => {
    const parsed = schema.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new DestinationError(`${what} ${i}: field ${issue.path.join('.') || '(item)'}: ${issue.message}`);
    }
    const stored = storable(parsed.data);
    byKey.set(keyOf(stored).join('\u0000'), stored);
  });
  return [...byKey.entries()].sort(([a], [b]) => byText(a, b)).map(([, item]) => item);
}

const storableText = (v: string | null) => (v === null ? null : storableString(v));

/** The rejected items of a batch, as `_rejected` upserts them (see keyedList), by (table, item key). */
export function rejectedList(items: readonly RejectedItem[] | undefined): RejectedItem[] {
  return keyedList(
    items ?? [],
    RejectedItem,
    'rejected item',
    (r) => ({
      table: r.table,
      itemKey: storableString(r.itemKey),
      itemId: storableText(r.itemId),
      stream: storableString(r.stream),
      scope: storableString(r.scope),
      pageCursor: storableText(r.pageCursor),
      reason: storableString(r.reason),
      raw: storableJson(r.raw) ?? null,
    }),
    (r) => [r.table, r.itemKey],
  );
}

/** The schema-change sightings of some batches, as `_schema_changes` upserts them (see keyedList). */
export function schemaChangeList(batches: readonly WriteBatch[]): SchemaChangeSighting[] {
  return keyedList(
    batches.flatMap((b) => b.schemaChanges ?? []),
    SchemaChangeSighting,
    'schema change',
    (c) => ({
      ...c,
      fieldPath: storableString(c.fieldPath),
      observed: storableString(c.observed),
      expected: storableText(c.expected),
      example: storableString(c.example),
      label: storableText(c.label),
      stream: storableString(c.stream),
    }),
    (c) => [c.table, c.fieldPath, c.kind, c.observed],
  );
}

/** A batch's result from what its merge counted: the rest of what it received was unchanged. */
export function writeResult(batch: WriteBatch, inserted: unknown, updated: unknown): WriteResult {
  const received = batch.rows.length;
  const [i, u] = [Number(inserted ?? 0), Number(updated ?? 0)];
  return { received, inserted: i, updated: u, unchanged: received - i - u };
}
