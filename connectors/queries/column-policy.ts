import type { ColumnAction } from '../../schemas/warehouse/column-policy.js';
import type { TableName } from '../../schemas/warehouse.js';
import type { SqlReader } from '../destination.js';

/**
 * Rows of `table` whose `column` holds a value a column-policy rule would not store: any value (`drop`),
 * or one that is not a hex digest (`hash`: plain text written before the rule).
 */
export async function rowsNotFollowingRule(
  reader: SqlReader,
  table: TableName,
  column: string,
  action: ColumnAction,
): Promise<number> {
  const [row] = await reader.select((d) => {
    const col = d.ident(column);
    const plain = action === 'hash' ? ` AND NOT ${d.isHexDigest(col)}` : '';
    return `SELECT COUNT(*) AS n FROM ${d.table(table)} WHERE ${col} IS NOT NULL${plain}`;
  });
  return Number(row?.['n'] ?? 0);
}
