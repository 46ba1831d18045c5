import type { TableSpec } from '../../schemas/warehouse.js';
import type { CascadeConditions, DeletionCandidates } from '../sql/deletions.js';
import type { BigQuerySession } from './session.js';

/*
 * Whether a deletion or a cascade can change a row, answered by table reads (tabledata.list: no job, nothing
 * billed) before its script runs. Most runs delete nothing — a full re-read of an unchanged collection, a
 * cascade with no ticket deleted — and the script's count alone bills 10 MB per table it names, 10 to 40 MB
 * per check for nothing. The reads test a superset of what the script would change (DeletionCandidates; a
 * cascade's two conditions exactly), so "none" is exact; anything else runs the script, which counts and
 * marks inside its own transaction.
 *
 * Called under the deletion's exclusive section, with the sightings not folded into `_synced_at` yet
 * (sightings.ts): a row is a candidate only if neither its `_synced_at` nor a sighting is as late as `since`.
 * The script that runs when one is follows a flush that folds the table's sightings, so it sees the same. A
 * row another process writes after the read gets `_synced_at` = now, later than any `since` of a deletion
 * under way, so it could not have been marked either.
 */

/** Rows of a table read at most (three short columns each): a larger table runs the script. */
export const PRECHECK_MAX_ROWS = 250_000;

/** Whether the deletion may mark a row; null: the table is too large to read, ask the script. */
export async function deletionMayMark(
  session: BigQuerySession,
  spec: TableSpec<unknown>,
  candidates: DeletionCandidates,
  /** When each id was last seen by a sighting not folded yet (ms). */
  sightings: ReadonlyMap<string, number> = new Map(),
  maxRows = PRECHECK_MAX_ROWS,
): Promise<boolean | null> {
  const key = spec.primaryKey[0]!;
  if (candidates.kind === 'ids' && candidates.ids.length === 0) return false;
  const within = candidates.kind === 'not_seen_since' ? candidates.within : undefined;
  const columns = [
    key,
    '_synced_at',
    '_deleted_at',
    ...(within && within.column !== key ? [within.column] : []),
  ];
  const rows = await session.readTableUpTo(spec.name, columns, maxRows);
  if (rows === null) return null;
  // Inside the range a refresh re-read (`column >= from`; a null column is outside, as in SQL).
  const inRange = (r: Record<string, unknown>) =>
    within === undefined ||
    (r[within.column] != null && Date.parse(String(r[within.column])) >= within.from.getTime());
  const live = rows.filter((r) => r['_deleted_at'] == null && inRange(r));
  if (candidates.kind === 'ids') {
    const ids = new Set(candidates.ids);
    return live.some((r) => ids.has(String(r[key])));
  }
  // `_synced_at < since` as the script compares it: the stored value has microseconds, `since` whole
  // milliseconds, so truncating the stored one to milliseconds (Date.parse) keeps the comparison exact.
  const since = candidates.since.getTime();
  return live.some((r) => {
    if (r['_synced_at'] == null) return false;
    const lastSeenMs = Math.max(Date.parse(String(r['_synced_at'])), sightings.get(String(r[key])) ?? 0);
    return lastSeenMs < since;
  });
}

/** Whether the cascade may mark or revive a row; null: a table is too large to read, ask the script. */
export async function cascadeMayChange(
  session: BigQuerySession,
  child: TableSpec<unknown>,
  conditions: CascadeConditions,
  maxRows = PRECHECK_MAX_ROWS,
): Promise<boolean | null> {
  const { foreignKey, parent, parentKey } = conditions.columns;
  const parents = await session.readTableUpTo(parent, [parentKey, '_deleted_at'], maxRows);
  if (parents === null) return null;
  const deletedParents = new Set<string>();
  const liveParents = new Set<string>();
  for (const p of parents)
    (p['_deleted_at'] == null ? liveParents : deletedParents).add(String(p[parentKey]));
  // No parent deleted and nothing to revive: no child can change, whatever the child table holds.
  if (deletedParents.size === 0 && conditions.revive === null) return false;
  const children = await session.readTableUpTo(child.name, [foreignKey, '_deleted_at'], maxRows);
  if (children === null) return null;
  return children.some((c) => {
    const fk = c[foreignKey];
    if (fk == null) return false;
    return c['_deleted_at'] == null
      ? deletedParents.has(String(fk))
      : conditions.revive !== null && liveParents.has(String(fk));
  });
}
