import { isDeepStrictEqual } from 'node:util';
import type pg from 'pg';

/** Where a workspace's rows are: a schema of its own, or its rows of a schema's shared tables. */
export type StoredAt = string | { readonly schema: string; readonly workspace: string };

/** Live (not deleted) rows of a warehouse table: id → raw JSON as received. */
export async function warehouseRows(
  db: pg.Client,
  table: string,
  at: StoredAt = 'support',
): Promise<Map<string, unknown>> {
  const { schema, workspace } = typeof at === 'string' ? { schema: at, workspace: null } : at;
  const hasDeleted = await db.query(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = $2 AND table_name = $1 AND column_name = '_deleted_at'`,
    [table, schema],
  );
  const conditions = [
    ...(hasDeleted.rowCount ? ['_deleted_at IS NULL'] : []),
    ...(workspace === null ? [] : ['workspace_id = $1']),
  ];
  const where = conditions.length > 0 ? `WHERE ${conditions.join(' AND ')}` : '';
  const { rows } = await db.query(
    `SELECT id, _raw FROM ${schema}.${table} ${where}`,
    workspace === null ? [] : [workspace],
  );
  return new Map(rows.map((r) => [String(r.id), r._raw]));
}

/**
 * How a table differs from what the source serves, in words (empty: equal), for a caller outside vitest's
 * `expect`: ids missing, ids extra, ids whose raw JSON differs. `except`: ids not expected (set aside).
 */
export async function tableDifferences(
  db: pg.Client,
  table: string,
  expected: ReadonlyMap<string, unknown>,
  except: ReadonlySet<string> = new Set(),
): Promise<string[]> {
  const exists = await db.query(`SELECT to_regclass($1) IS NOT NULL AS ok`, [`support.${table}`]);
  if (!exists.rows[0].ok) return [`${table}: no table`];
  const stored = await warehouseRows(db, table);
  const missing = [...expected.keys()].filter((id) => !except.has(id) && !stored.has(id));
  const extra = [...stored.keys()].filter((id) => except.has(id) || !expected.has(id));
  const altered = [...stored.keys()].filter(
    (id) => expected.has(id) && !except.has(id) && !isDeepStrictEqual(stored.get(id), expected.get(id)),
  );
  const some = (ids: string[]) => `${ids.slice(0, 3).join(', ')}${ids.length > 3 ? ' …' : ''}`;
  return [
    ...(missing.length ? [`${table}: ${missing.length} of ${expected.size} missing (${some(missing)})`] : []),
    ...(extra.length ? [`${table}: ${extra.length} not expected (${some(extra)})`] : []),
    ...(altered.length ? [`${table}: ${altered.length} differ (${some(altered)})`] : []),
  ];
}
