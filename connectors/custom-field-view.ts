import {
  CUSTOM_FIELD_LABELS_VIEW,
  type CustomFieldColumn,
  type CustomFieldSource,
  customFieldColumns,
  customFieldLabelsView,
  customFieldScanSql,
  customFieldsView,
  VALUE_CLASSES,
  type ValueClass,
} from '../schemas/custom-fields-view.js';
import { CUSTOM_FIELD_PATH_PREFIX } from '../schemas/warehouse.js';
import type { Destination, SqlReader } from './destination.js';
import { isMissingRelation } from './sql/dialect.js';

/*
 * The views `ticket_custom_fields` and `ticket_custom_field_labels` (schemas/custom-fields-view.ts), built on
 * the destination's core, from the custom fields of every workspace the tables hold (`target`: in shared
 * tables one view's columns are the union of the workspaces' fields, a workspace's rows null where it has no
 * such field): which fields, of which classes of value, under which current label, read with
 * `select` against the shared dialect — a scan of `tickets.ticket_fields`, when `_schema_changes` first and
 * last saw each field, and the columns the view had (its label view), which stay even when no stored ticket
 * holds such a value any more (a field retyped everywhere), so no query on them breaks — then both views
 * replaced (`replaceView`, the warehouse's DDL).
 */

/**
 * Regenerates `ticket_custom_fields` from the custom fields the live tickets hold (one typed column per field
 * and class of value) and its label view; returns the field columns. prepare() runs it, and a run that
 * recorded a new custom field (activities/schema-drift.ts).
 */
export async function refreshCustomFieldView(
  destination: Pick<Destination, 'select' | 'replaceView' | 'writtenSpec'>,
): Promise<CustomFieldColumn[]> {
  // A tickets table of an older model (a test's override) without custom fields has no such view.
  if (!destination.writtenSpec('tickets').columns.some((c) => c.name === 'ticket_fields')) return [];
  const sources = await customFieldSourcesOf(destination);
  const columns = customFieldColumns(sources);
  await destination.replaceView(customFieldsView(columns));
  await destination.replaceView(customFieldLabelsView(sources));
  return columns;
}

const isValueClass = (v: unknown): v is ValueClass => VALUE_CLASSES.includes(v as ValueClass);

async function customFieldSourcesOf(reader: SqlReader): Promise<CustomFieldSource[]> {
  const scan = (await reader.select((d) => customFieldScanSql(d))).map((row) => ({
    key: String(row['field_key']),
    label: row['label'] === null || row['label'] === undefined ? null : String(row['label']),
    valueClass: row['value_class'],
    n: Number(row['n']),
    updatedAt: row['updated_at'] === null || row['updated_at'] === undefined ? '' : String(row['updated_at']),
  }));
  const newFieldChanges = (
    await reader.select(
      (d) => `SELECT field_path, MIN(first_seen_at) AS first_seen_at, MAX(last_seen_at) AS last_seen_at
        FROM ${d.target('_schema_changes')}
        WHERE table_name = 'tickets' AND kind = 'new_custom_field' GROUP BY field_path`,
    )
  ).map((row) => ({
    key: String(row['field_path']).slice(CUSTOM_FIELD_PATH_PREFIX.length),
    firstSeenAt: String(row['first_seen_at']),
    lastSeenAt: String(row['last_seen_at']),
  }));
  const recorded = new Map(newFieldChanges.map((r) => [r.key, r]));
  const fields = new Map<
    string,
    { classes: Partial<Record<ValueClass, number>>; label: string | null; labelAt: string }
  >();
  for (const r of scan) {
    const field = fields.get(r.key) ?? { classes: {}, label: r.label, labelAt: r.updatedAt };
    if (isValueClass(r.valueClass)) field.classes[r.valueClass] = (field.classes[r.valueClass] ?? 0) + r.n;
    // The current label: the one on the latest updated ticket (of two as recent, the smaller, so the same
    // data always gives the same label); a ticket without one names none.
    if (
      r.label !== null &&
      (field.label === null ||
        r.updatedAt > field.labelAt ||
        (r.updatedAt === field.labelAt && r.label < field.label))
    ) {
      field.label = r.label;
      field.labelAt = r.updatedAt;
    }
    fields.set(r.key, field);
  }
  for (const kept of await previousColumns(reader)) {
    const field = fields.get(kept.key) ?? { classes: {}, label: kept.label, labelAt: '' };
    field.classes[kept.valueClass] ??= 0;
    fields.set(kept.key, field);
  }
  return [...fields].map(([key, f]) => ({
    key,
    label: f.label,
    firstSeenAt: recorded.get(key)?.firstSeenAt ?? null,
    lastSeenAt: recorded.get(key)?.lastSeenAt ?? null,
    classes: f.classes,
  }));
}

/** The columns the label view lists (none before the first regeneration). */
async function previousColumns(
  reader: SqlReader,
): Promise<{ key: string; label: string | null; valueClass: ValueClass }[]> {
  try {
    const rows = await reader.select(
      (d) =>
        `SELECT field_id, label, value_type FROM ${d.target(CUSTOM_FIELD_LABELS_VIEW)} WHERE column_name IS NOT NULL`,
    );
    return rows.flatMap((row) =>
      isValueClass(row['value_type'])
        ? [
            {
              key: String(row['field_id']),
              label: row['label'] === null || row['label'] === undefined ? null : String(row['label']),
              valueClass: row['value_type'],
            },
          ]
        : [],
    );
  } catch (err) {
    if (isMissingRelation(err)) return [];
    throw err;
  }
}
