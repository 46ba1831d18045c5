import {
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
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, cp]) => cp);
}

/**
 * The rejected items of a batch, validated and made storable (like rows: no U+0000, no lone surrogates),
 * deduplicated on the key `_rejected` is merged on (the last sighting wins: one statement cannot upsert a key
 * twice) and sorted, so concurrent writers lock entries in one order. An invalid item throws a
 * DestinationError naming its position and field, never its content (raw items may hold anything).
 */
export function rejectedList(items: readonly RejectedItem[] | undefined): RejectedItem[] {
  const byKey = new Map<string, RejectedItem>();
  (items ?? []).forEach((item, i) => {
    const parsed = RejectedItem.safeParse(item);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new DestinationError(
        `rejected item ${i}: field ${issue.path.join('.') || '(item)'}: ${issue.message}`,
      );
    }
    const r = parsed.data;
    const text = (v: string | null) => (v === null ? null : storableString(v));
    const storable: RejectedItem = {
      table: r.table,
      itemKey: storableString(r.itemKey),
      itemId: text(r.itemId),
      stream: storableString(r.stream),
      scope: storableString(r.scope),
      pageCursor: text(r.pageCursor),
      reason: storableString(r.reason),
      raw: storableJson(r.raw) ?? null,
    };
    byKey.set(`${storable.table}\u0000${storable.itemKey}`, storable);
  });
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, item]) => item);
}

/**
 * The schema-change sightings of some batches, validated, made storable and deduplicated on the key
 * `_schema_changes` is upserted by (the last sighting wins), sorted by that key so concurrent writers lock
 * entries in one order. An invalid sighting throws a DestinationError naming its position and field.
 */
export function schemaChangeList(batches: readonly WriteBatch[]): SchemaChangeSighting[] {
  const byKey = new Map<string, SchemaChangeSighting>();
  batches
    .flatMap((b) => b.schemaChanges ?? [])
    .forEach((sighting, i) => {
      const parsed = SchemaChangeSighting.safeParse(sighting);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new DestinationError(
          `schema change ${i}: field ${issue.path.join('.') || '(sighting)'}: ${issue.message}`,
        );
      }
      const c = parsed.data;
      const text = (v: string | null) => (v === null ? null : storableString(v));
      const storable: SchemaChangeSighting = {
        ...c,
        fieldPath: storableString(c.fieldPath),
        observed: storableString(c.observed),
        expected: text(c.expected),
        example: storableString(c.example),
        label: text(c.label),
        stream: storableString(c.stream),
      };
      byKey.set([c.table, storable.fieldPath, c.kind, storable.observed].join('\u0000'), storable);
    });
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, c]) => c);
}

/** A batch's result from what its merge counted: the rest of what it received was unchanged. */
export function writeResult(batch: WriteBatch, inserted: unknown, updated: unknown): WriteResult {
  const received = batch.rows.length;
  const [i, u] = [Number(inserted ?? 0), Number(updated ?? 0)];
  return { received, inserted: i, updated: u, unchanged: received - i - u };
}
