import type { BigQuery } from '@google-cloud/bigquery';
import { expect } from 'vitest';
import { COMPARED_TABLES, type SourceSnapshot } from './source-snapshot.js';

/** Live rows of a BigQuery table: id → raw JSON as received. */
async function bigQueryRows(bq: BigQuery, dataset: string, table: string): Promise<Map<string, unknown>> {
  const [meta] = await bq.dataset(dataset).table(table).getMetadata();
  const tracksDeletion = (meta.schema.fields as { name: string }[]).some((f) => f.name === '_deleted_at');
  const [rows] = await bq.query(
    `SELECT id, TO_JSON_STRING(_raw) AS raw FROM \`${dataset}\`.\`${table}\`${tracksDeletion ? ' WHERE _deleted_at IS NULL' : ''}`,
  );
  return new Map((rows as { id: unknown; raw: string }[]).map((r) => [String(r.id), JSON.parse(r.raw)]));
}

/** Every compared table holds exactly the source's items (ids, and the raw JSON per id). */
export async function expectBigQueryEqualsSource(bq: BigQuery, dataset: string, source: SourceSnapshot) {
  for (const table of COMPARED_TABLES) {
    const stored = await bigQueryRows(bq, dataset, table);
    const expected = source[table];
    expect({ table, ids: [...stored.keys()].sort() }).toEqual({ table, ids: [...expected.keys()].sort() });
    for (const [id, raw] of expected) expect({ table, id, raw: stored.get(id) }).toEqual({ table, id, raw });
  }
}

/** Rows per table, asserting no duplicate ids (BigQuery has no primary-key constraint). */
export async function duplicateIds(bq: BigQuery, dataset: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of COMPARED_TABLES) {
    const [rows] = await bq.query(
      `SELECT COUNT(*) - COUNT(DISTINCT id) AS dups FROM \`${dataset}\`.\`${table}\``,
    );
    out[table] = Number((rows as { dups: number }[])[0]!.dups);
  }
  return out;
}
