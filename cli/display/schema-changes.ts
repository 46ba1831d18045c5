import type { SchemaChangeRecord } from '../../schemas/warehouse.js';

const pad = (s: unknown, n: number) => String(s ?? '').padEnd(n);

/** How many recent schema changes `status` lists (all of them are in `_schema_changes`). */
export const RECENT_SCHEMA_CHANGES = 20;

/**
 * `status`'s schema drift: the changes first seen most recently, one line each — when, kind, where, the new
 * value or type and what the schema expected, how many runs saw it, an example. Null rows: a warehouse a sync
 * of an older version prepared (no `_schema_changes` yet).
 */
export function schemaChangeLines(rows: readonly SchemaChangeRecord[] | null): string[] {
  if (rows === null)
    return ['Schema changes (_schema_changes): none recorded yet (the next sync creates the table)'];
  if (rows.length === 0)
    return ['Schema changes (_schema_changes): none — the source serves what the connector knows'];
  return [
    `Schema changes (_schema_changes, ${rows.length === RECENT_SCHEMA_CHANGES ? `the ${rows.length} most recent` : `${rows.length}`}, newest first; every value stays whole in _raw):`,
    ...rows.map((c) => {
      const what = c.observed === '' ? '' : ` = ${c.observed}`;
      const expected = c.expected === null ? '' : ` (expected ${c.expected})`;
      const label = c.label === null ? '' : ` "${c.label}"`;
      return `  ${pad(c.first_seen_at.slice(0, 19), 21)}${pad(c.kind, 18)}${c.table_name}.${c.field_path}${label}${what}${expected}; runs ${c.runs_seen}, last ${c.last_seen_at.slice(0, 19)}, e.g. ${c.example}`;
    }),
  ];
}
