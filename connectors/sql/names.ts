import type { ColumnType } from '../../schemas/warehouse.js';

/** The warehouses a destination writes to. */
type WarehouseKind = 'postgres' | 'bigquery';

/** Each logical column type's name in each warehouse, side by side (docs/warehouse.md prints this table). */
const TYPE_NAMES: { readonly [T in ColumnType]: { readonly [K in WarehouseKind]: string } } = {
  string: { postgres: 'text', bigquery: 'STRING' },
  integer: { postgres: 'bigint', bigquery: 'INT64' },
  float: { postgres: 'double precision', bigquery: 'FLOAT64' },
  boolean: { postgres: 'boolean', bigquery: 'BOOL' },
  timestamp: { postgres: 'timestamptz', bigquery: 'TIMESTAMP' },
  json: { postgres: 'jsonb', bigquery: 'JSON' },
};

/** Logical column type → the type name of one warehouse (in the column types' order). */
export function typeNamesOf(kind: WarehouseKind): Readonly<Record<ColumnType, string>> {
  return Object.fromEntries(Object.entries(TYPE_NAMES).map(([type, names]) => [type, names[kind]])) as Record<
    ColumnType,
    string
  >;
}

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Quotes an identifier. Only plain identifiers are accepted (names come from our specs and config), so the
 * quoting never needs escaping and no name can smuggle SQL in.
 */
export function quotePlainIdentifier(name: string, quote: string, language: string): string {
  if (!PLAIN_IDENTIFIER.test(name))
    throw new Error(`not a plain ${language} identifier: ${JSON.stringify(name)}`);
  return `${quote}${name}${quote}`;
}
