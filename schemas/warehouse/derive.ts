import { z } from 'zod';

/**
 * Columns derived from zod schemas: each field of an object schema becomes a typed column (wrappers set
 * nullability, composites become JSON), so a table's columns are never restated beside the API's schema.
 */

/** Logical column types; each destination maps them (see its type map). */
export const ColumnType = z.enum(['string', 'integer', 'float', 'boolean', 'timestamp', 'json']);
export type ColumnType = z.infer<typeof ColumnType>;

export interface ColumnSpec {
  readonly name: string;
  readonly type: ColumnType;
  readonly nullable: boolean;
  readonly description: string;
  /**
   * Path of the value inside the item that `_raw` holds (derived columns), e.g. ['contact', 'email']. A
   * migration that adds the column fills existing rows from `_raw` along it; computed columns have none.
   */
  readonly path?: readonly string[];
  /** Allowed values when the source field is an enum (documentation only; the column stays a string). */
  readonly enumValues?: readonly string[];
}

interface ZodInternals {
  _zod: { def: { type: string; [k: string]: unknown }; bag: Record<string, unknown> };
}
const internals = (schema: unknown) => (schema as ZodInternals)._zod;

interface Leaf {
  type: ColumnType;
  nullable: boolean;
  enumValues?: readonly string[];
  /** Set when the leaf is a (non-flattened) object: its shape, for optional flattening. */
  shape?: Record<string, unknown>;
}

/** Maps one zod schema to a column type: wrappers set nullability, composites become JSON. */
function leafOf(schema: unknown): Leaf {
  const { def, bag } = internals(schema);
  switch (def.type) {
    case 'optional':
    case 'nullable':
      return { ...leafOf(def['innerType']), nullable: true };
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
      return leafOf(def['innerType']);
    case 'pipe':
      return leafOf(def['out']);
    case 'string':
      return { type: def['format'] === 'datetime' ? 'timestamp' : 'string', nullable: false };
    case 'number': {
      const format = bag['format'] ?? (schema as { format?: string | null }).format;
      const isInt = format === 'safeint' || format === 'int32' || format === 'uint32' || format === 'int64';
      return { type: isInt ? 'integer' : 'float', nullable: false };
    }
    case 'bigint':
      return { type: 'integer', nullable: false };
    case 'boolean':
      return { type: 'boolean', nullable: false };
    case 'enum':
      return {
        type: 'string',
        nullable: false,
        enumValues: Object.values(def['entries'] as Record<string, string>),
      };
    case 'literal': {
      const values = def['values'] as unknown[];
      const first = values[0];
      const type: ColumnType =
        typeof first === 'number' ? 'float' : typeof first === 'boolean' ? 'boolean' : 'string';
      return { type, nullable: values.includes(null) };
    }
    case 'object':
      return { type: 'json', nullable: false, shape: def['shape'] as Record<string, unknown> };
    default:
      // array, record, union, tuple, unknown, any: kept whole as JSON
      return { type: 'json', nullable: false };
  }
}

export interface DeriveOptions {
  /** Object fields flattened into `<field>_<sub>` columns (the JSON stays in `_raw`). */
  readonly flatten?: readonly string[];
  /** Fields left out of the typed columns (still in `_raw`). */
  readonly omit?: readonly string[];
  /** Column descriptions by column name. Every derived column must have one (checked at load). */
  readonly descriptions: Readonly<Record<string, string>>;
}

/** Walks a zod object's shape into columns. Flattened objects give nullable columns if the object is. */
export function deriveColumns(
  table: string,
  objectSchema: z.ZodObject,
  options: DeriveOptions,
): ColumnSpec[] {
  const columns: ColumnSpec[] = [];
  const describe = (name: string) => {
    const d = options.descriptions[name];
    if (d === undefined) throw new Error(`warehouse: column ${table}.${name} has no description`);
    return d;
  };
  const columnOf = (name: string, leaf: Leaf, path: readonly string[]) =>
    column(name, leaf.type, leaf.nullable, describe(name), {
      path,
      ...(leaf.enumValues ? { enumValues: leaf.enumValues } : {}),
    });
  for (const [field, fieldSchema] of Object.entries(objectSchema.shape)) {
    if (options.omit?.includes(field)) continue;
    const leaf = leafOf(fieldSchema);
    if (options.flatten?.includes(field) && leaf.shape) {
      for (const [sub, subSchema] of Object.entries(leaf.shape)) {
        const subLeaf = leafOf(subSchema);
        // A sub-field is null whenever its object is, whatever the sub-field's own schema says.
        columns.push(
          columnOf(`${field}_${sub}`, { ...subLeaf, nullable: leaf.nullable || subLeaf.nullable }, [
            field,
            sub,
          ]),
        );
      }
    } else columns.push(columnOf(field, leaf, [field]));
  }
  return columns;
}

/** One column spec; `extra` carries the source path and enum values of derived columns. */
export function column(
  name: string,
  type: ColumnType,
  nullable: boolean,
  description: string,
  extra: { path?: readonly string[]; enumValues?: readonly string[] } = {},
): ColumnSpec {
  return { name, type, nullable, description, ...extra };
}
