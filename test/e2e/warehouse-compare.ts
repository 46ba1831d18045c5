import type pg from 'pg';
import { expect } from 'vitest';
import { COMPARED_TABLES, type SourceSnapshot } from './source-snapshot.js';

/** Live (not deleted) rows of a warehouse table: id → raw JSON as received. */
export async function warehouseRows(db: pg.Client, table: string): Promise<Map<string, unknown>> {
  const hasDeleted = await db.query(
    `SELECT 1 FROM information_schema.columns WHERE table_schema = 'support' AND table_name = $1 AND column_name = '_deleted_at'`,
    [table],
  );
  const where = hasDeleted.rowCount ? 'WHERE _deleted_at IS NULL' : '';
  const { rows } = await db.query(`SELECT id, _raw FROM support.${table} ${where}`);
  return new Map(rows.map((r) => [String(r.id), r._raw]));
}

/** Every compared table holds exactly the source's items: same ids, same counts, same field values. */
export async function expectWarehouseEqualsSource(db: pg.Client, source: SourceSnapshot): Promise<void> {
  for (const table of COMPARED_TABLES) {
    const stored = await warehouseRows(db, table);
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
