import type { AuditTable } from '../../schemas/audit.js';
import { canonicalJson } from '../../schemas/warehouse.js';

/** One stored field that differs from what the source serves now: `field` is a column, or `_raw.<key>`. */
export interface FieldDifference {
  readonly field: string;
  readonly warehouse: unknown;
  readonly source: unknown;
}

/**
 * How a value of `table.field` is written into `_audit` — the one place that does. Both values come out of
 * the destination's written spec (`Destination.writtenSpec`: the column policy applied to the source's row
 * before comparing), so a field the policy hashes appears here as its two hashes and a dropped field never
 * differs: no audit row holds what the table itself does not.
 */
export function renderAuditValue(_table: AuditTable, _field: string, value: unknown): unknown {
  return value;
}

/** The `differences` column: `[{field, warehouse, source}]` as JSON text (an absent `_raw` key: no member). */
export function renderDifferences(table: AuditTable, differences: readonly FieldDifference[]): string | null {
  if (differences.length === 0) return null;
  return `[${differences
    .map((d) =>
      canonicalJson({
        field: d.field,
        warehouse: renderAuditValue(table, d.field, d.warehouse),
        source: renderAuditValue(table, d.field, d.source),
      }),
    )
    .join(',')}]`;
}
