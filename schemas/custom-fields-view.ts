import {
  CUSTOM_FIELD_ID_KEYS,
  CUSTOM_FIELD_LABEL_KEYS,
  CUSTOM_FIELD_VALUE_KEY,
} from './api/custom-fields.js';
import type { ColumnType } from './warehouse.js';
import type { SqlDialect, ViewColumn, ViewSpec } from './warehouse-views.js';

/**
 * The view `ticket_custom_fields`: custom ticket fields, which live in one JSON column of `tickets`
 * (`ticket_fields`), as one typed column per field, for BI tools that cannot chart JSON. Unlike the fixed
 * views (schemas/warehouse-views.ts) its columns come from the data: the fields the live tickets hold, each
 * typed from the values seen, named after the field's label. A destination regenerates it
 * (`Destination.refreshCustomFieldView`) at prepare() and after a run that recorded a new custom field.
 *
 * Reading an entry in SQL repeats schemas/api/custom-fields.ts: the id is the first of `field_id`, `id`,
 * `key`; the label the first of `name`, `label`, `title`; the value is `value`.
 */

export const CUSTOM_FIELDS_VIEW = 'ticket_custom_fields';

/** What the values of a field are, as the view types them (JSON null and missing values are not counted). */
export const VALUE_CLASSES = ['number', 'boolean', 'timestamp', 'text', 'json'] as const;
export type ValueClass = (typeof VALUE_CLASSES)[number];

/** A field as the warehouse knows it: from the live tickets (and `_schema_changes`, for its first sighting). */
export interface CustomFieldSource {
  readonly key: string;
  readonly label: string | null;
  /** When `_schema_changes` first saw it; null for a field it has no row of (a warehouse synced before). */
  readonly firstSeenAt: string | null;
  /** How many live tickets hold a value of each class. */
  readonly classes: Readonly<Partial<Record<ValueClass, number>>>;
}

export interface CustomFieldColumn extends CustomFieldSource {
  /** The view column: the label (else the key) made a plain identifier, unique in the view. */
  readonly column: string;
  readonly type: ColumnType;
}

const CLASS_TYPES: Readonly<Record<ValueClass, ColumnType>> = {
  number: 'float',
  boolean: 'boolean',
  timestamp: 'timestamp',
  text: 'string',
  json: 'json',
};

/** Columns every row has before the fields. */
const BASE_COLUMNS: readonly ViewColumn[] = [
  { name: 'ticket_id', type: 'string', description: 'Ticket id (joins current_tickets.id).' },
  { name: 'ticket_number', type: 'integer', description: 'Ticket number.' },
];

/** Column names stay short enough for every warehouse (BigQuery: 300, PostgreSQL: 63 bytes). */
const MAX_NAME = 50;

/**
 * A plain identifier from a label or key: accents dropped, lower case, every run of other characters one
 * `_`, at most 50 characters, never starting with a digit. Only `[a-z0-9_]` survive, so a label can never
 * carry SQL into the view (and the dialect quotes it anyway).
 */
export function columnNameOf(text: string): string {
  const base = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+/, '')
    .slice(0, MAX_NAME)
    .replace(/_+$/, '');
  if (base === '') return 'field';
  return /^[0-9]/.test(base) ? `f_${base}` : base;
}

/**
 * The view's columns: one per field, in the order the fields were first seen (then by key), so a field that
 * appears later never takes the name of one already charted; a name taken gets `_2`, `_3`, … Typed by the
 * values seen: one class of values gives its type (number → float, boolean, timestamp, text → string,
 * objects and lists → json); none or several give text.
 */
export function customFieldColumns(sources: readonly CustomFieldSource[]): CustomFieldColumn[] {
  // Fields `_schema_changes` has no row of (seen before it existed) come after those it has, by key.
  const order = (s: CustomFieldSource) => [s.firstSeenAt === null ? '1' : '0', s.firstSeenAt ?? '', s.key];
  const ordered = [...sources].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    return 0;
  });
  const taken = new Set(BASE_COLUMNS.map((c) => c.name));
  return ordered.map((source) => {
    const base = columnNameOf(source.label ?? source.key);
    let column = base;
    for (let n = 2; taken.has(column); n++) column = `${base}_${n}`;
    taken.add(column);
    return { ...source, column, type: typeOf(source.classes) };
  });
}

function typeOf(classes: CustomFieldSource['classes']): ColumnType {
  const seen = VALUE_CLASSES.filter((c) => (classes[c] ?? 0) > 0);
  return seen.length === 1 ? CLASS_TYPES[seen[0]!] : 'string';
}

/** The entry's field id (the first non-empty of its id keys), as text. */
const entryKey = (d: SqlDialect, e: string) =>
  `COALESCE(${CUSTOM_FIELD_ID_KEYS.map((k) => `NULLIF(${d.jsonScalarText(d.jsonMember(e, k))}, '')`).join(', ')})`;
const entryLabel = (d: SqlDialect, e: string) =>
  `COALESCE(${CUSTOM_FIELD_LABEL_KEYS.map((k) => d.jsonScalarText(d.jsonMember(e, k))).join(', ')})`;
const entryValue = (d: SqlDialect, e: string) => d.jsonMember(e, CUSTOM_FIELD_VALUE_KEY);

/**
 * The fields the live tickets hold: one row per (field_key, value_class) with the tickets holding such a
 * value (`n`) and a label (the smallest, so the same data always gives the same one); value_class is null for
 * null or missing values.
 */
export function customFieldScanSql(d: SqlDialect): string {
  return `SELECT x.field_key, MIN(x.label) AS label, x.value_class, COUNT(*) AS n
FROM (
  SELECT ${entryKey(d, 'e')} AS field_key, ${entryLabel(d, 'e')} AS label, ${d.jsonValueClass(entryValue(d, 'e'))} AS value_class
  FROM ${d.table('tickets')} t, ${d.jsonElements('t.ticket_fields', 'e')}
  WHERE t.${d.ident('_deleted_at')} IS NULL
) x
WHERE x.field_key IS NOT NULL
GROUP BY x.field_key, x.value_class`;
}

function describe(c: CustomFieldColumn): string {
  const counts = VALUE_CLASSES.filter((k) => (c.classes[k] ?? 0) > 0)
    .map((k) => `${k} ${c.classes[k]}`)
    .join(', ');
  const label = c.label === null ? '' : ` ("${c.label}")`;
  return `Custom field ${c.key}${label}, typed from the values of the live tickets (${counts || 'none yet'}); a value of another type is null here and whole in tickets.ticket_fields.`;
}

/** The view over the given columns: the live tickets, each field's value typed, null where it does not fit. */
export function customFieldsView(columns: readonly CustomFieldColumn[]): ViewSpec {
  return {
    name: CUSTOM_FIELDS_VIEW,
    description:
      "Custom ticket fields as typed columns: one row per current ticket, one column per custom field the live tickets hold (named after its label, typed from the values seen: number, boolean, timestamp, text; json for objects and lists; text when the values are of several types). Regenerated when fields appear (at each worker's start and after a run that recorded a new custom field in _schema_changes); the values stay whole in tickets.ticket_fields.",
    columns: [
      ...BASE_COLUMNS,
      ...columns.map((c) => ({ name: c.column, type: c.type, description: describe(c) })),
    ],
    sql: (d) => {
      const fields = columns.map(
        (c) =>
          `  (SELECT ${d.jsonAs(entryValue(d, 'e'), c.type)} FROM ${d.jsonElements('t.ticket_fields', 'e')} WHERE ${entryKey(d, 'e')} = ${d.string(c.key)} LIMIT 1) AS ${d.ident(c.column)}`,
      );
      return `SELECT t.id AS ticket_id, t.ticket_number${fields.length > 0 ? `,\n${fields.join(',\n')}` : ''}
FROM ${d.table('tickets')} t
WHERE t.${d.ident('_deleted_at')} IS NULL`;
    },
  };
}
