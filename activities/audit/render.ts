import type { AuditTable } from '../../schemas/audit.js';
import { canonicalJson } from '../../schemas/warehouse.js';

/** One stored field that differs from what the source serves now: `field` is a column, or `_raw.<key>`. */
export interface FieldDifference {
  readonly field: string;
  readonly warehouse: unknown;
  readonly source: unknown;
}

/**
 * How a value of `table.field` is written into `_audit` — the one place, so that a column policy (a column
 * the warehouse keeps only as a hash, or not at all) applies here and no audit row can leak what the table
 * itself does not hold. Today every value is kept as the warehouse and the source have it.
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
