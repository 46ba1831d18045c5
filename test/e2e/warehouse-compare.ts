import type pg from 'pg';
import { expect } from 'vitest';
import { COMPARED_TABLES, type SourceSnapshot } from './source-snapshot.js';
import { type StoredAt, warehouseRows } from './warehouse-rows.js';

export { warehouseRows };

/** Every compared table holds exactly the source's items: same ids, same counts, same field values. */
export async function expectWarehouseEqualsSource(
  db: pg.Client,
  source: SourceSnapshot,
  at: StoredAt = 'support',
): Promise<void> {
  for (const table of COMPARED_TABLES) {
    const stored = await warehouseRows(db, table, at);
    const expected = source[table];
    expect({ table, ids: [...stored.keys()].sort() }).toEqual({ table, ids: [...expected.keys()].sort() });
    for (const [id, raw] of expected) {
      expect({ table, id, raw: stored.get(id) }).toEqual({ table, id, raw });
    }
  }
}

/** Rows per table including duplicates check (primary keys make duplicates impossible; count anyway). */
export async function rowCounts(db: pg.Client): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of COMPARED_TABLES) {
    const { rows } = await db.query(
      `SELECT count(*)::int AS n, count(DISTINCT id)::int AS d FROM support.${table}`,
    );
    expect(rows[0].n).toBe(rows[0].d);
    out[table] = rows[0].n;
  }
  return out;
}
