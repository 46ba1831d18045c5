import { canonicalTimestamp, type TableName } from '../../schemas/warehouse.js';
import type { DestinationSettings } from '../settings.js';
import type { BigQuerySession } from './session.js';
import { type MergedBatches, mergedBatches, stagedManifests, type UnmergedBatch } from './state-reads.js';

/*
 * Sightings: the ids a page saw again unchanged (a batch's seen ids). `_synced_at` means "last seen in the
 * source", and moving it is an UPDATE of the table: on BigQuery at least 10 MB, and the whole table (or its
 * partitions touched) once it is larger — for every table a run re-reads, every run, though nothing changed.
 * So a sighting is folded into `_synced_at` lazily: when a deletion that may mark rows needs `_synced_at`
 * exact, when a test's `query` asks, or once it is a day old; the audit and `freshness` lay unfolded ones
 * over the rows they read instead (read only).
 * Meanwhile it is read from the manifests (`_staging_batches`, which list seen ids per table) by table reads:
 * a sighting stands for the stamp of the flush that merged its batch (`_staging_merged.merged_at`, what that
 * flush would have written), or for "later than now" while its batch is not merged. `_staging_folded`
 * records which (batch, table) sightings are folded.
 */

/** How old an unfolded sighting may get before a flush folds its table (well inside the staging retention). */
export const FOLD_AFTER_MS = 24 * 60 * 60 * 1000;

/** The seen ids of one merged batch for one table, not folded yet, and the stamp they stand for. */
export interface UnfoldedSighting {
  readonly batch: string;
  readonly table: string;
  readonly ids: readonly string[];
  readonly atMs: number;
}

const pairKey = (batch: string, table: string) => `${batch}\u0000${table}`;

/** The (batch, table) sightings folded (`_staging_folded`, a table read). */
export async function foldedSightings(session: BigQuerySession): Promise<Set<string>> {
  const rows = await session.readTable(session.staging.folded, ['batch', 'table_name']);
  return new Set(rows.map((r) => pairKey(String(r['batch']), String(r['table_name']))));
}

/** The sightings of merged batches not folded yet, from manifests, merged markers and folded markers read. */
export function unfoldedOf(
  manifests: readonly UnmergedBatch[],
  merged: MergedBatches,
  folded: ReadonlySet<string>,
): UnfoldedSighting[] {
  const out: UnfoldedSighting[] = [];
  for (const { batch, manifest } of manifests) {
    const atMs = merged.get(batch);
    if (atMs === undefined) continue;
    for (const [table, ids] of Object.entries(manifest.seen ?? {}))
      if (ids.length > 0 && !folded.has(pairKey(batch, table))) out.push({ batch, table, ids, atMs });
  }
  return out;
}

/**
 * When each id of `table` was last seen by a sighting not folded yet (ms; +Infinity: its batch is not merged,
 * so the flush that merges it stamps it later than now).
 */
export async function unfoldedSightingsOf(
  session: BigQuerySession,
  table: string,
): Promise<Map<string, number>> {
  // Markers first, then manifests: a batch merged after the first read reads as pending (later than now),
  // which its stamp is not earlier than — it was chosen after the batch was staged.
  const merged = await mergedBatches(session);
  const folded = await foldedSightings(session);
  const manifests = await stagedManifests(session);
  const last = new Map<string, number>();
  const see = (id: string, at: number) => last.set(id, Math.max(last.get(id) ?? at, at));
  for (const { batch, manifest } of manifests) {
    if (merged.has(batch)) continue;
    for (const id of manifest.seen?.[table] ?? []) see(id, Number.POSITIVE_INFINITY);
  }
  for (const s of unfoldedOf(manifests, merged, folded))
    if (s.table === table) for (const id of s.ids) see(id, s.atMs);
  return last;
}

/**
 * Sightings grouped for a fold: per stamp, the ids — one STRUCT per group in the fold's SQL (flush-sql.ts),
 * each id once (at its latest stamp).
 */
export function foldGroups(sightings: readonly { ids: readonly string[]; atMs: number }[]) {
  const latest = new Map<string, number>();
  for (const s of sightings)
    for (const id of s.ids) latest.set(id, Math.max(latest.get(id) ?? s.atMs, s.atMs));
  const byStamp = new Map<number, string[]>();
  for (const [id, at] of latest) {
    const ids = byStamp.get(at) ?? [];
    ids.push(id);
    byStamp.set(at, ids);
  }
  return [...byStamp].map(([atMs, ids]) => ({ at: new Date(atMs), ids }));
}

/**
 * The sightings of `table` not folded into `_synced_at` yet, laid over the rows (id → row, changed in
 * place): one not merged yet stands for "now" (its flush stamps it later). Read only: the `plan` command
 * reads through it.
 */
export async function laySightingsOver(
  session: BigQuerySession,
  settings: DestinationSettings,
  table: TableName,
  rows: Map<string, Record<string, unknown>>,
): Promise<void> {
  if (rows.size === 0) return;
  const sightings = await session.withErrorMapping('sightings', () => unfoldedSightingsOf(session, table));
  // A batch not merged yet: stamped by its flush, not earlier than now (flush.ts stamps the same way).
  const now = (settings.serverClock ? session.warehouseTimeNotBefore() : settings.clock()).getTime();
  for (const [id, row] of rows) {
    const seen = sightings.get(id);
    if (seen === undefined) continue;
    const at = Number.isFinite(seen) ? seen : now;
    const stored =
      row['_synced_at'] == null ? Number.NEGATIVE_INFINITY : Date.parse(String(row['_synced_at']));
    if (at > stored) row['_synced_at'] = canonicalTimestamp(new Date(at).toISOString());
  }
}
