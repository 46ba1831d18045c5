import { z } from 'zod';
import { openJson } from './open.js';

/**
 * Custom ticket fields as the connector reads them out of `ticket_fields` (spec 2.2: "custom-field value
 * shape: not shown"). The companion serves a list of `{field_id, name, type, value}`; another workspace may
 * name the id `id` or `key` and the label `label` or `title`, and may leave the type out. One reading,
 * shared by the drift reader (a new custom field in `_schema_changes`) and the typed view
 * (`ticket_custom_fields`, schemas/custom-fields-view.ts), which repeats it in SQL.
 */

/** Type of a custom ticket field as the companion serves it (not shown, spec 2.2; the companion's choice). */
export const TicketFieldType = z.enum(['text', 'number', 'boolean', 'dropdown', 'multi_select', 'date']);
export type TicketFieldType = z.infer<typeof TicketFieldType>;

/** Keys that may hold an entry's field id, in the order they are tried. */
export const CUSTOM_FIELD_ID_KEYS = ['field_id', 'id', 'key'] as const;
/** Keys that may hold an entry's label, in the order they are tried. */
export const CUSTOM_FIELD_LABEL_KEYS = ['name', 'label', 'title'] as const;
/** The key of an entry's value. */
export const CUSTOM_FIELD_VALUE_KEY = 'value';
/** The key of an entry's declared type (the companion's `TicketFieldType`; optional). */
export const CUSTOM_FIELD_TYPE_KEY = 'type';
/** Every key of an entry this reading uses; any other is a new field of the entries. */
export const CUSTOM_FIELD_ENTRY_KEYS: readonly string[] = [
  ...CUSTOM_FIELD_ID_KEYS,
  ...CUSTOM_FIELD_LABEL_KEYS,
  CUSTOM_FIELD_VALUE_KEY,
  CUSTOM_FIELD_TYPE_KEY,
];

/** Schemas whose value holds custom fields (the ticket's `ticket_fields`), for the drift reader. */
export const customFieldSchemas = z.registry<{ readonly customFields: true }>();

/** The ticket's `ticket_fields`: kept whole as JSON (shape not shown), and read as custom fields. */
export const customFieldValues = () => openJson().register(customFieldSchemas, { customFields: true });

export interface CustomFieldEntry {
  /** The field's id as text (`field_id`, `id` or `key`). */
  readonly key: string;
  readonly label: string | null;
  /** The type the entry declares, when it declares one. */
  readonly declaredType: string | null;
  /** The value as served (`undefined` when the entry has none). */
  readonly value: unknown;
  /** The entry as served. */
  readonly entry: Readonly<Record<string, unknown>>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function firstText(entry: Record<string, unknown>, keys: readonly string[]): string | null {
  for (const k of keys) {
    const v = entry[k];
    if (typeof v === 'string' && v !== '') return v;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  }
  return null;
}

/** The custom-field entries of a `ticket_fields` value; entries without an id are left out. */
export function customFieldEntries(ticketFields: unknown): CustomFieldEntry[] {
  if (!Array.isArray(ticketFields)) return [];
  return ticketFields.flatMap((entry) => {
    if (!isObject(entry)) return [];
    const key = firstText(entry, CUSTOM_FIELD_ID_KEYS);
    if (key === null) return [];
    const label = CUSTOM_FIELD_LABEL_KEYS.map((k) => entry[k]).find((v) => typeof v === 'string');
    const type = entry[CUSTOM_FIELD_TYPE_KEY];
    return [
      {
        key,
        label: typeof label === 'string' ? label : null,
        declaredType: typeof type === 'string' ? type : null,
        value: entry[CUSTOM_FIELD_VALUE_KEY],
        entry,
      },
    ];
  });
}

/** The JSON type a declared field type's values have (a declared type we do not know: none expected). */
export const DECLARED_TYPE_JSON: Readonly<
  Record<TicketFieldType, 'string' | 'number' | 'boolean' | 'array'>
> = {
  text: 'string',
  number: 'number',
  boolean: 'boolean',
  dropdown: 'string',
  multi_select: 'array',
  date: 'string',
};

export function expectedJsonTypeOf(declaredType: string | null): string | null {
  return declaredType !== null && Object.hasOwn(DECLARED_TYPE_JSON, declaredType)
    ? DECLARED_TYPE_JSON[declaredType as TicketFieldType]
    : null;
}
