import { z } from 'zod';
import {
  CUSTOM_FIELD_ENTRY_KEYS,
  customFieldEntries,
  customFieldSchemas,
  expectedJsonTypeOf,
} from './custom-fields.js';
import { openEnumValues } from './open.js';

/**
 * Schema drift as the reader sees it: what an item holds that the zod schema it was read with does not know.
 * The schema is the baseline — its keys (recursively, where it has nested objects and arrays), the JSON
 * types it reads each field as, and the known values of its open enums (schemas/api/open.ts) — so the
 * comparison is a walk of the item's keys against a model built once per schema: cheap enough for every
 * page. Only items that were stored are compared (an item that breaks a strict rule is in `_rejected`).
 *
 * Kinds:
 *  - `new_field`: a key the schema does not have (reported once at its own path; its content is not walked);
 *  - `new_enum_value`: a value of an open enum outside the known ones (message role, direction, status, …);
 *  - `type_change`: a value whose JSON type is not one the schema reads the field as (a number where text is
 *    expected, an object where a list of ids is), for a custom field not its declared type's, for a new
 *    (custom) field not the one seen before (on the page here; across pages and runs the destination compares with the
 *    stored row, connectors/sql/schema-changes.ts);
 *  - `new_custom_field`: a custom ticket field (an entry of `ticket_fields`): each becomes a column of the
 *    view `ticket_custom_fields`, so its first sighting is a change of that view.
 */
export const SchemaChangeKind = z.enum(['new_field', 'new_enum_value', 'type_change', 'new_custom_field']);
export type SchemaChangeKind = z.infer<typeof SchemaChangeKind>;

export const JsonType = z.enum(['null', 'string', 'number', 'boolean', 'object', 'array']);
export type JsonType = z.infer<typeof JsonType>;

/** One difference between a page's items and their schema (deduplicated per page by path, kind, observed). */
export interface DriftObservation {
  /** Where in the item: `sla_breached_at`, `contact.company`, `team_ids[]`, `ticket_fields.<field id>`. */
  readonly fieldPath: string;
  readonly kind: SchemaChangeKind;
  /** The new enum value, or the JSON type a type change saw; empty for new (custom) fields. */
  readonly observed: string;
  /** What the schema expects there: the known enum values or the JSON types; null for new fields. */
  readonly expected: string | null;
  /** JSON type of the example. */
  readonly jsonType: JsonType;
  /** A short, masked rendering of the value (see exampleOf); never the whole item. */
  readonly example: string;
  /** A custom field's label (`name`, `label` or `title` of its entry); null otherwise. */
  readonly label: string | null;
}

/** A page reports at most this many differences: a source whose keys are ids must not flood the table. */
export const MAX_DRIFT_PER_PAGE = 50;

const TEXT_LIMIT = 100;
const EXAMPLE_LIMIT = 120;

interface Model {
  /** JSON types the schema reads the value as; null: any value (open JSON, unknown). */
  readonly types: ReadonlySet<JsonType> | null;
  readonly known?: readonly string[];
  /** Known keys of an object (absent: any keys, e.g. a record). */
  readonly keys?: ReadonlyMap<string, Model>;
  readonly element?: Model;
  readonly customFields?: boolean;
}

interface ZodInternals {
  _zod: { def: { type: string; [k: string]: unknown } };
}
const defOf = (schema: unknown) => (schema as ZodInternals)._zod.def;
const ANY: Model = { types: null };

/** The model of a zod schema: wrappers add `null`, preprocessed (open) fields read as their output schema. */
function modelOf(schema: z.ZodType): Model {
  const known = openEnumValues.get(schema)?.known;
  if (customFieldSchemas.get(schema)) return { types: null, customFields: true };
  const def = defOf(schema);
  const inner = (key: string) => modelOf(def[key] as z.ZodType);
  const of = (...types: JsonType[]): ReadonlySet<JsonType> => new Set(types);
  let model: Model;
  switch (def.type) {
    case 'nullable': {
      const m = inner('innerType');
      model = m.types ? { ...m, types: new Set([...m.types, 'null']) } : m;
      break;
    }
    case 'optional':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
      model = inner('innerType');
      break;
    case 'pipe':
      model = inner('out');
      break;
    case 'string':
    case 'enum':
      model = { types: of('string') };
      break;
    case 'number':
    case 'bigint':
      model = { types: of('number') };
      break;
    case 'boolean':
      model = { types: of('boolean') };
      break;
    case 'null':
      model = { types: of('null') };
      break;
    case 'literal':
      model = { types: new Set((def['values'] as unknown[]).map(jsonTypeOf)) };
      break;
    case 'object': {
      const shape = def['shape'] as Record<string, z.ZodType>;
      const keys = new Map(Object.entries(shape).map(([k, s]) => [k, modelOf(s)]));
      model = { types: of('object'), keys };
      break;
    }
    case 'record':
      model = { types: of('object') };
      break;
    case 'array':
      model = { types: of('array'), element: inner('element') };
      break;
    case 'union': {
      const options = (def['options'] as z.ZodType[]).map(modelOf);
      model = options.some((o) => o.types === null)
        ? ANY
        : { types: new Set(options.flatMap((o) => [...(o.types ?? [])])) };
      break;
    }
    default:
      model = ANY;
  }
  return known ? { ...model, known } : model;
}

const models = new WeakMap<z.ZodType, Model>();

/** The differences between items (as received) and the schema they were read with, one per (path, kind, observed). */
export function driftOf(schema: z.ZodType, items: readonly unknown[]): DriftObservation[] {
  let model = models.get(schema);
  if (!model) {
    model = modelOf(schema);
    models.set(schema, model);
  }
  const kept = new Map<string, DriftObservation>();
  const report: Report = (fieldPath, kind, observed, expected, value, label = null) => {
    const key = `${fieldPath}\u0000${kind}\u0000${observed}`;
    const earlier = kept.get(key);
    // A new (custom) field with values of two JSON types on one page: the later type is a type change.
    if (earlier && (kind === 'new_field' || kind === 'new_custom_field') && earlier.jsonType !== 'null') {
      const type = jsonTypeOf(value);
      if (type !== 'null' && type !== earlier.jsonType)
        report(fieldPath, 'type_change', type, `${earlier.jsonType} (as seen before)`, value);
    }
    // The first sighting is kept, unless it was a null and a later one shows what the field holds. The
    // example is made only then: most sightings repeat one already kept.
    const keep = earlier
      ? earlier.jsonType === 'null' && value !== null && value !== undefined
      : kept.size < MAX_DRIFT_PER_PAGE;
    if (keep)
      kept.set(key, {
        fieldPath,
        kind,
        observed,
        expected,
        jsonType: jsonTypeOf(value),
        example: exampleOf(value),
        label,
      });
  };
  for (const item of items) walk(model, item, '', report);
  return [...kept.values()];
}

type Report = (
  fieldPath: string,
  kind: SchemaChangeKind,
  observed: string,
  expected: string | null,
  value: unknown,
  label?: string | null,
) => void;

function walk(model: Model, value: unknown, path: string, report: Report): void {
  const type = jsonTypeOf(value);
  if (model.types && !model.types.has(type)) {
    report(path, 'type_change', type, describeTypes(model.types), value);
    return;
  }
  if (model.known && typeof value === 'string' && !model.known.includes(value)) {
    report(path, 'new_enum_value', short(value), model.known.join(', '), value);
  }
  if (model.customFields) walkCustomFields(value, path, report);
  if (type === 'object' && model.keys) {
    for (const key in value as Record<string, unknown>) {
      const child = (value as Record<string, unknown>)[key];
      const field = model.keys.get(key);
      // Fields the schema takes as they come (open JSON) need no walk.
      if (field === ANY) continue;
      const at = path === '' ? key : `${path}.${key}`;
      if (field) walk(field, child, at, report);
      else report(at, 'new_field', '', null, child);
    }
  }
  if (type === 'array' && model.element && model.element !== ANY) {
    for (const element of value as unknown[]) walk(model.element, element, `${path}[]`, report);
  }
}

/** Custom fields: each field, entry keys the reading does not use, values not of their declared type. */
function walkCustomFields(value: unknown, path: string, report: Report): void {
  for (const field of customFieldEntries(value)) {
    const at = `${path}.${field.key}`;
    report(at, 'new_custom_field', '', null, field.value, short(field.label));
    for (const key in field.entry)
      if (!ENTRY_KEYS.has(key)) report(`${path}[].${key}`, 'new_field', '', null, field.entry[key]);
    const expected = expectedJsonTypeOf(field.declaredType);
    const type = jsonTypeOf(field.value);
    if (expected !== null && type !== expected && type !== 'null')
      report(at, 'type_change', type, `${expected} (declared type ${field.declaredType})`, field.value);
  }
}

const ENTRY_KEYS: ReadonlySet<string> = new Set(CUSTOM_FIELD_ENTRY_KEYS);

export function jsonTypeOf(value: unknown): JsonType {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  return t === 'string' || t === 'number' || t === 'boolean' ? t : 'object';
}

/** `string or null`: the types in a fixed order, null last. */
function describeTypes(types: ReadonlySet<JsonType>): string {
  return JsonType.options
    .filter((t) => t !== 'null' && types.has(t))
    .concat(types.has('null') ? ['null'] : [])
    .join(' or ');
}

function short<T extends string | null>(text: T): T {
  if (text === null || text.length <= TEXT_LIMIT) return text;
  return `${text.slice(0, TEXT_LIMIT - 1)}…` as T;
}

/** Strings that may be personal data: an e-mail address, a phone number (a date is none). */
const EMAIL = /@/;
const PHONE = /\+?\d[\d\s\-().]{6,}\d/;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;
const EXAMPLE_STRING = 40;

/**
 * A value as `_schema_changes` shows it: JSON, strings cut to 40 characters and masked where they look like an
 * e-mail address or a phone number, at most 5 entries of a list or object and 2 levels deep, at most 120
 * characters in all. Enough to see what the field holds; never the whole item. (The API key is scrubbed from
 * it by the client, as from every reported problem.)
 */
export function exampleOf(value: unknown): string {
  const text = JSON.stringify(shrink(value, 0)) ?? 'null';
  return text.length <= EXAMPLE_LIMIT ? text : `${text.slice(0, EXAMPLE_LIMIT - 1)}…`;
}

function shrink(value: unknown, depth: number): unknown {
  if (typeof value === 'string') {
    if (EMAIL.test(value)) return '<e-mail>';
    if (PHONE.test(value) && !ISO_DATE.test(value)) return '<phone>';
    return value.length <= EXAMPLE_STRING ? value : `${value.slice(0, EXAMPLE_STRING - 1)}…`;
  }
  if (value === null || typeof value !== 'object') return value ?? null;
  if (depth >= 2) return Array.isArray(value) ? ['…'] : { '…': '…' };
  if (Array.isArray(value)) {
    const head = value.slice(0, 5).map((v) => shrink(v, depth + 1));
    return value.length > 5 ? [...head, '…'] : head;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  const head = entries.slice(0, 5).map(([k, v]) => [k, shrink(v, depth + 1)]);
  return Object.fromEntries(entries.length > 5 ? [...head, ['…', '…']] : head);
}
