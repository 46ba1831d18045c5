import type { ViewFilter } from '../../schemas/api/index.js';
import type { SqlDialect } from '../../schemas/warehouse-views.js';
import type { SqlReader } from '../destination.js';

/* A saved view's filters computed over `current_tickets`: what the reconciliation compares its count with. */

/** The column of `current_tickets` each filter condition the warehouse can compute reads. */
const VIEW_CONDITION_COLUMNS: Readonly<Record<string, string>> = {
  status: 'status',
  channel: 'channel',
  priority: 'priority',
  team: 'team_id',
  assignee: 'assignee_id',
};

/** Whether the warehouse can compute a filter of this condition (others make a view's count skipped). */
export function isComputableCondition(condition: string): boolean {
  return condition in VIEW_CONDITION_COLUMNS;
}

/**
 * In ONE query of the current tickets, how many match each list of filters (every filter computable, see
 * isComputableCondition; an empty list matches every ticket), in order.
 */
export async function currentTicketsMatching(
  reader: SqlReader,
  filterLists: readonly (readonly ViewFilter[])[],
): Promise<number[]> {
  const counts = filterLists.map(() => 0);
  for (const r of await reader.select(
    (d) =>
      `SELECT COUNT(*) AS n${filterLists
        .map(
          (filters, i) => `, SUM(CASE WHEN ${filterSql(d, filters) || '1 = 1'} THEN 1 ELSE 0 END) AS v${i}`,
        )
        .join('')} FROM ${d.table('current_tickets')} t`,
  ))
    filterLists.forEach((_, i) => {
      counts[i]! += Number(r[`v${i}`] ?? 0);
    });
  return counts;
}

/** All filters must hold (the view's saved filters combine with AND). */
function filterSql(d: SqlDialect, filters: readonly ViewFilter[]): string {
  return filters
    .map((f) => {
      const column = `t.${d.ident(VIEW_CONDITION_COLUMNS[f.condition]!)}`;
      const list = f.options.length ? f.options.map((o) => d.string(o)).join(', ') : null;
      if (f.operator === 'is_not')
        return list ? `(${column} IS NULL OR ${column} NOT IN (${list}))` : '1 = 1';
      return list ? `${column} IN (${list})` : '1 = 0';
    })
    .join(' AND ');
}
