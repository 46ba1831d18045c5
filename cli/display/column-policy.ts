import type { SqlReader } from '../../connectors/destination.js';
import { rowsNotFollowingRule } from '../../connectors/queries/column-policy.js';
import { type ColumnPolicy, columnsReplaced } from '../../schemas/warehouse/column-policy.js';

/** How far the warehouse follows one rule of the column policy (`status`). */
export interface PolicyCheck {
  readonly entry: string;
  /** `table.column` checked; null for a rule only `_raw` can hold (not checked). */
  readonly column: string | null;
  /** Rows whose column still holds a value the rule would not store: plain text (hash), any value (drop). */
  readonly rows_not_applied: number | null;
}

/**
 * Rows written before a rule of the policy (or under another one): the rule's typed columns still holding
 * a value it would not store. Rows are rewritten under the current policy when the sync reads them again,
 * so what is counted here is what has not been read since — rows of deleted tickets, export windows
 * outside the look-back — until a full refresh. `_raw` is written with its row, so the column stands for it.
 * A changed SYNC_HASH_KEY is not visible here (a hash under the old key is still a hash).
 */
export async function columnPolicyChecks(
  destination: SqlReader,
  policy: ColumnPolicy,
): Promise<PolicyCheck[]> {
  const checks: PolicyCheck[] = [];
  for (const rule of policy) {
    const columns = columnsReplaced(rule.table, rule.path);
    if (columns.length === 0) checks.push({ entry: rule.entry, column: null, rows_not_applied: null });
    for (const c of columns) {
      checks.push({
        entry: rule.entry,
        column: `${rule.table}.${c.name}`,
        rows_not_applied: await rowsNotFollowingRule(destination, rule.table, c.name, rule.action),
      });
    }
  }
  return checks;
}

export function columnPolicyLines(checks: readonly PolicyCheck[]): string[] {
  if (checks.length === 0) return ['Column policy (SYNC_COLUMN_POLICY): none'];
  const pending = checks.filter((c) => (c.rows_not_applied ?? 0) > 0);
  const lines = [
    `Column policy (SYNC_COLUMN_POLICY): ${pending.length === 0 ? 'every stored row follows it' : `${pending.length} column${pending.length === 1 ? '' : 's'} with rows written before it`}`,
  ];
  for (const c of checks) {
    const state =
      c.rows_not_applied === null
        ? 'in _raw only (not checked)'
        : c.rows_not_applied === 0
          ? 'applied to every row'
          : `${c.rows_not_applied} rows still hold a value the rule would not store`;
    // A `_raw` rule can rewrite several columns: each is named; a column's own rule names it already.
    const column = c.column === null || c.entry.startsWith(`${c.column}=`) ? '' : `${c.column}: `;
    lines.push(`  ${c.entry.padEnd(36)}${column}${state}`);
  }
  if (pending.length > 0)
    lines.push(
      '  (rows are rewritten under the policy when the sync reads them again; a full refresh reads everything the source still serves: sync --once --full-refresh)',
    );
  return lines;
}
