import {
  type CustomFieldColumn,
  type CustomFieldSource,
  customFieldColumns,
  customFieldScanSql,
  VALUE_CLASSES,
  type ValueClass,
} from '../../schemas/custom-fields-view.js';
import { CUSTOM_FIELD_PATH_PREFIX } from '../../schemas/warehouse.js';
import { parsedRows, type SqlSession, statement } from './dialect.js';

/*
 * The columns of `ticket_custom_fields`, written once against the dialect: the fields the live tickets hold
 * with the classes of their values (a scan of `tickets.ticket_fields`), and when `_schema_changes` first saw
 * each (so a field that appears later never takes an older field's name).
 */

const isValueClass = (v: unknown): v is ValueClass => VALUE_CLASSES.includes(v as ValueClass);

export async function customFieldColumnsOf(session: SqlSession): Promise<CustomFieldColumn[]> {
  const d = session.dialect;
  const scan = await parsedRows(
    session,
    'customFieldColumns',
    statement(d, () => customFieldScanSql(d)),
    (row) => ({
      key: String(row['field_key']),
      label: row['label'] === null || row['label'] === undefined ? null : String(row['label']),
      valueClass: row['value_class'],
      n: Number(row['n']),
    }),
  );
  const firstSeen = await parsedRows(
    session,
    'customFieldColumns',
    statement(
      d,
      () => `SELECT field_path, label, first_seen_at FROM ${d.table('_schema_changes')}
        WHERE table_name = 'tickets' AND kind = 'new_custom_field'`,
    ),
    (row) => ({
      key: String(row['field_path']).slice(CUSTOM_FIELD_PATH_PREFIX.length),
      label: row['label'] === null ? null : String(row['label']),
      firstSeenAt: String(row['first_seen_at']),
    }),
  );
  const recorded = new Map(firstSeen.map((r) => [r.key, r]));
  const sources = new Map<string, CustomFieldSource & { classes: Partial<Record<ValueClass, number>> }>();
  for (const r of scan) {
    const known = recorded.get(r.key);
    const source = sources.get(r.key) ?? {
      key: r.key,
      // The label as `_schema_changes` first saw it: a field renamed at the source keeps its column.
      label: known?.label ?? r.label,
      firstSeenAt: known?.firstSeenAt ?? null,
      classes: {},
    };
    if (isValueClass(r.valueClass)) source.classes[r.valueClass] = (source.classes[r.valueClass] ?? 0) + r.n;
    sources.set(r.key, source);
  }
  return customFieldColumns([...sources.values()]);
}
