import { createHash } from 'node:crypto';
import {
  CUSTOM_FIELD_ID_KEYS,
  CUSTOM_FIELD_LABEL_KEYS,
  CUSTOM_FIELD_VALUE_KEY,
} from './api/custom-fields.js';
import type { ColumnType } from './warehouse.js';
import type { SqlDialect, ViewColumn, ViewSpec } from './warehouse-views.js';

/**
 * The view `ticket_custom_fields`: custom ticket fields, which live in one JSON column of `tickets`
 * (`ticket_fields`), as typed columns, for BI tools that cannot chart JSON. Unlike the fixed views
 * (schemas/warehouse-views.ts) its columns come from the data: one per field and type of value the stored
 * tickets hold. A column is named after the field's id and the type, never its label, so a label renamed at the
 * source changes no column a dashboard reads; a field whose values change type gets a second column beside the
 * first, which keeps the values of the tickets still holding the old type. The labels live in the column
 * comments and in the view `ticket_custom_field_labels` (field id → column → current label). A destination
 * regenerates both (connectors/custom-field-view.ts) at prepare() and after a run that recorded a new
 * custom field.
 *
 * Reading an entry in SQL repeats schemas/api/custom-fields.ts: the id is the first of `field_id`, `id`,
 * `key`; the label the first of `name`, `label`, `title`; the value is `value`.
 */

export const CUSTOM_FIELDS_VIEW = 'ticket_custom_fields';
export const CUSTOM_FIELD_LABELS_VIEW = 'ticket_custom_field_labels';

/** What the values of a field are, as the view types them (JSON null and missing values are not counted). */
export const VALUE_CLASSES = ['number', 'boolean', 'timestamp', 'text', 'json'] as const;
export type ValueClass = (typeof VALUE_CLASSES)[number];

/** A field as the warehouse knows it: from the stored tickets and `_schema_changes`. */
export interface CustomFieldSource {
  readonly key: string;
  /** The label of the most recently updated ticket holding the field (the source's current label). */
  readonly label: string | null;
  /** When `_schema_changes` first saw it; null for a field it has no row of (a warehouse synced before). */
  readonly firstSeenAt: string | null;
  /** When `_schema_changes` last recorded it; null as firstSeenAt. */
  readonly lastSeenAt: string | null;
  /**
   * How many stored tickets (deleted ones included) hold a value of each class; a class with 0 is a column the
   * view had and keeps.
   */
  readonly classes: Readonly<Partial<Record<ValueClass, number>>>;
}

/** A column of the view: one field's values of one class. */
export interface CustomFieldColumn {
  readonly key: string;
  readonly label: string | null;
  readonly firstSeenAt: string | null;
  readonly lastSeenAt: string | null;
  /** The class of the values this column holds. */
  readonly valueClass: ValueClass;
  /** Stored tickets (deleted ones included) holding a value of that class. */
  readonly tickets: number;
  /** The view column: fieldColumnName(key, valueClass). */
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

/** A field id used as it is in a column name: lower case, a plain identifier, short (PostgreSQL: 63 bytes). */
const PLAIN_ID = /^[a-z][a-z0-9_]{0,39}$/;
/** The prefix of a column named by a digest of its field id; no plain id used as it is starts with it. */
const DIGEST_PREFIX = 'cf_';

/**
 * The column of a field's values of one class: `<field id>_<class>` when the id is a plain lower-case
 * identifier of at most 40 characters (`fld_13a467c906_number`), else `cf_<first 12 hex of the id's SHA-256>_<class>`.
 * It depends on nothing but the id and the class, so it never changes while the field exists. Distinct
 * (id, class) pairs get distinct names: no class name is the tail of another after `_`, and ids used as they
 * are never start with `cf_`. Only `[a-z0-9_]` reach SQL (and the dialect quotes the name anyway).
 */
export function fieldColumnName(key: string, valueClass: ValueClass): string {
  const base =
    PLAIN_ID.test(key) && !key.startsWith(DIGEST_PREFIX)
      ? key
      : `${DIGEST_PREFIX}${createHash('sha256').update(key, 'utf8').digest('hex').slice(0, 12)}`;
  return `${base}_${valueClass}`;
}

/**
 * The view's columns: one per field and class of value the stored tickets hold, in the order the fields were
 * first seen (then by key; fields `_schema_changes` has no row of last), each field's classes in VALUE_CLASSES
 * order. A field none of whose values is set yet has no column (its row in the label view says so); a class
 * counted 0 (a column the view had) keeps its column.
 */
export function customFieldColumns(sources: readonly CustomFieldSource[]): CustomFieldColumn[] {
  return orderedFields(sources).flatMap((source) =>
    VALUE_CLASSES.filter((c) => source.classes[c] !== undefined).map((valueClass) => ({
      key: source.key,
      label: source.label,
      firstSeenAt: source.firstSeenAt,
      lastSeenAt: source.lastSeenAt,
      valueClass,
      tickets: source.classes[valueClass] ?? 0,
      column: fieldColumnName(source.key, valueClass),
      type: CLASS_TYPES[valueClass],
    })),
  );
}

function orderedFields(sources: readonly CustomFieldSource[]): CustomFieldSource[] {
  const order = (s: CustomFieldSource) => [s.firstSeenAt === null ? '1' : '0', s.firstSeenAt ?? '', s.key];
  return [...sources].sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    return 0;
  });
}

/** The entry's field id (the first non-empty of its id keys), as text. */
const entryKey = (d: SqlDialect, e: string) =>
  `COALESCE(${CUSTOM_FIELD_ID_KEYS.map((k) => `NULLIF(${d.jsonScalarText(d.jsonMember(e, k))}, '')`).join(', ')})`;
const entryLabel = (d: SqlDialect, e: string) =>
  `COALESCE(${CUSTOM_FIELD_LABEL_KEYS.map((k) => d.jsonScalarText(d.jsonMember(e, k))).join(', ')})`;
const entryValue = (d: SqlDialect, e: string) => d.jsonMember(e, CUSTOM_FIELD_VALUE_KEY);

/**
 * The fields the stored tickets hold (deleted ones included, so a column lives as long as any ticket kept its
 * values): one row per (field_key, label, value_class) with the tickets holding such an entry (`n`) and the
 * latest `updated_at` among them (which label is the current one); value_class is null for null or missing
 * values.
 */
export function customFieldScanSql(d: SqlDialect): string {
  return `SELECT x.field_key, x.label, x.value_class, COUNT(*) AS n, MAX(x.updated_at) AS updated_at
FROM (
  SELECT ${entryKey(d, 'e')} AS field_key, ${entryLabel(d, 'e')} AS label, ${d.jsonValueClass(entryValue(d, 'e'))} AS value_class, t.updated_at
  FROM ${d.target('tickets')} t, ${d.jsonElements('t.ticket_fields', 'e')}
) x
WHERE x.field_key IS NOT NULL
GROUP BY x.field_key, x.label, x.value_class`;
}

function describe(c: CustomFieldColumn): string {
  const label = c.label === null ? '' : ` ("${c.label}")`;
  return `Custom field ${c.key}${label}: its ${c.valueClass} values (${c.tickets} stored tickets). Named by the field id and the type, never the label (ticket_custom_field_labels maps ids and columns to labels); a value of another type is in that type's column, and whole in tickets.ticket_fields.`;
}

/** The view over the given columns: the live tickets, each field's value typed, null where it does not fit. */
export function customFieldsView(columns: readonly CustomFieldColumn[]): ViewSpec {
  return {
    name: CUSTOM_FIELDS_VIEW,
    description:
      "Custom ticket fields as typed columns: one row per current ticket, one column per custom field and type of value the stored tickets hold, named `<field id>_<type>` (a field id that is no plain lower-case name of at most 40 characters: `cf_<12 hex of its SHA-256>_<type>`), never after the label, so renaming a label at the source breaks no query; the label is in the column comment and in ticket_custom_field_labels. Types: number (float), boolean, timestamp, text, json (objects and lists). A field whose values change type gets a column for the new type beside the old one, which keeps the values of the tickets still holding the old type. Regenerated when fields appear (at each worker's start and after a run that recorded a new custom field in _schema_changes); the values stay whole in tickets.ticket_fields.",
    columns: [
      ...BASE_COLUMNS,
      ...columns.map((c) => ({ name: c.column, type: c.type, description: describe(c) })),
    ],
    sql: (d) => {
      const fields = columns.map(
        (c) =>
          `  (SELECT ${d.jsonAs(entryValue(d, 'e'), c.type)} FROM ${d.jsonElements('t.ticket_fields', 'e')} WHERE ${entryKey(d, 'e')} = ${d.string(c.key)} AND ${d.jsonValueClass(entryValue(d, 'e'))} = ${d.string(c.valueClass)} LIMIT 1) AS ${d.ident(c.column)}`,
      );
      return `SELECT t.id AS ticket_id, t.ticket_number${fields.length > 0 ? `,\n${fields.join(',\n')}` : ''}
FROM ${d.table('tickets')} t
WHERE t.${d.ident('_deleted_at')} IS NULL`;
    },
  };
}

const LABEL_COLUMNS: readonly ViewColumn[] = [
  { name: 'field_id', type: 'string', description: 'The custom field id (ticket_fields[].field_id).' },
  {
    name: 'column_name',
    type: 'string',
    description:
      'Its column in ticket_custom_fields; null while none of its values is set. A field with values of several types has one row per type.',
  },
  {
    name: 'label',
    type: 'string',
    description:
      'Its current label: the one on the most recently updated ticket holding the field. A renamed label changes here, never the column.',
  },
  {
    name: 'value_type',
    type: 'string',
    description:
      'The type of the values in the column: number, boolean, timestamp, text or json; null as column_name.',
  },
  {
    name: 'column_type',
    type: 'string',
    description: "The column's type: float, boolean, timestamp, string or json; null as column_name.",
  },
  {
    name: 'tickets',
    type: 'integer',
    description:
      'Stored tickets (deleted ones included) holding a value of that type; 0 for a column kept after its last such value went (the field retyped) or while none is set.',
  },
  {
    name: 'first_seen_at',
    type: 'timestamp',
    description:
      'When a sync first saw the field (_schema_changes, kind new_custom_field); null for a field seen before that table recorded it.',
  },
  {
    name: 'last_seen_at',
    type: 'timestamp',
    description: 'When a sync last recorded the field (_schema_changes); null as first_seen_at.',
  },
];

/**
 * The view `ticket_custom_field_labels`: which column of ticket_custom_fields holds which field, and the
 * field's current label. Its rows are written into the view at each regeneration (they come from the scan,
 * and the column names from a digest no SQL of both warehouses computes alike).
 */
export function customFieldLabelsView(sources: readonly CustomFieldSource[]): ViewSpec {
  const columns = customFieldColumns(sources);
  const rows = orderedFields(sources).flatMap((source): Record<string, unknown>[] => {
    const fieldColumns = columns.filter((c) => c.key === source.key);
    const base = {
      field_id: source.key,
      label: source.label,
      first_seen_at: source.firstSeenAt,
      last_seen_at: source.lastSeenAt,
    };
    return fieldColumns.length === 0
      ? [{ ...base, column_name: null, value_type: null, column_type: null, tickets: 0 }]
      : fieldColumns.map((c) => ({
          ...base,
          column_name: c.column,
          value_type: c.valueClass,
          column_type: c.type,
          tickets: c.tickets,
        }));
  });
  return {
    name: CUSTOM_FIELD_LABELS_VIEW,
    description:
      'The labels of the custom-field columns: one row per column of ticket_custom_fields (field id, column name, current label, type, when the field was first and last seen), and one with a null column for a field none of whose values is set. Join it to map a column to the label a person reads, or to find the column of a label; regenerated with ticket_custom_fields.',
    columns: LABEL_COLUMNS,
    sql: (d) => {
      const literal = (value: unknown, type: ColumnType): string => {
        if (value === null || value === undefined) return `CAST(NULL AS ${d.type(type)})`;
        if (type === 'timestamp') return d.timestamp(String(value));
        if (type === 'integer') return `CAST(${Number(value)} AS ${d.type(type)})`;
        return `CAST(${d.string(String(value))} AS ${d.type(type)})`;
      };
      const select = (row: Record<string, unknown> | null) =>
        `SELECT ${LABEL_COLUMNS.map((c) => `${literal(row?.[c.name] ?? null, c.type)} AS ${d.ident(c.name)}`).join(', ')}`;
      if (rows.length === 0) return `${select(null)} FROM (SELECT 1 AS one) z WHERE 1 = 0`;
      return rows.map((r) => select(r)).join('\nUNION ALL\n');
    },
  };
}
