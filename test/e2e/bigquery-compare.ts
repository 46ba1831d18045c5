import type { BigQuery } from '@google-cloud/bigquery';
import { expect } from 'vitest';
import { COMPARED_TABLES, type SourceSnapshot } from './source-snapshot.js';

/** Where a workspace's rows are: a dataset of its own, or its rows of a dataset's shared tables. */
export type StoredIn = string | { readonly dataset: string; readonly workspace: string };

/** Live rows of a BigQuery table (a workspace's, in shared tables): id → raw JSON as received. */
export async function bigQueryRows(bq: BigQuery, at: StoredIn, table: string): Promise<Map<string, unknown>> {
  const { dataset, workspace } = typeof at === 'string' ? { dataset: at, workspace: null } : at;
  const [meta] = await bq.dataset(dataset).table(table).getMetadata();
  const tracksDeletion = (meta.schema.fields as { name: string }[]).some((f) => f.name === '_deleted_at');
  const where = [
    ...(tracksDeletion ? ['_deleted_at IS NULL'] : []),
    ...(workspace === null ? [] : ['workspace_id = @workspace']),
  ];
  const [rows] = await bq.query({
    query: `SELECT id, TO_JSON_STRING(_raw) AS raw FROM \`${dataset}\`.\`${table}\`${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''}`,
    params: workspace === null ? {} : { workspace },
  });
  return new Map((rows as { id: unknown; raw: string }[]).map((r) => [String(r.id), JSON.parse(r.raw)]));
}

/** Every compared table holds exactly the source's items (ids, and the raw JSON per id). */
export async function expectBigQueryEqualsSource(bq: BigQuery, at: StoredIn, source: SourceSnapshot) {
  for (const table of COMPARED_TABLES) {
    const stored = await bigQueryRows(bq, at, table);
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
