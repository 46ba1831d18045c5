import type { ApiRowInput, AuditVerdict, TableSpec, WarehouseRow } from '../../schemas/warehouse.js';
import { canonicalJson, compareVersions } from '../../schemas/warehouse.js';
import type { FieldDifference } from './render.js';

/**
 * Judging what one audit unit read (pure): every row the page served or the warehouse holds in the part of
 * the source the page covered, compared field by field, with a verdict that allows for changes the source
 * made after the warehouse last read the row.
 */

/**
 * How long before the warehouse's read a source change still counts as newer than it. Reads come from a
 * replica that can trail the inbox by seconds (spec 1), and the source's clock (its stamps) and the
 * warehouse's (`_synced_at`) are not the same clock: a change stamped within this margin of the read may
 * not have been served by it.
 */
export const SOURCE_GRACE_MS = 60_000;

/** Bookkeeping columns: not fields of the item (the content hash is compared through the fields it hashes). */
const NOT_FIELDS = new Set(['_raw', '_synced_at', '_deleted_at', '_content_hash']);

/**
 * The stored fields of a row that differ from the row the source serves now: every typed column, then every
 * key of the item kept in `_raw` that no typed column holds (`_raw.<key>`), so nothing stored goes
 * unchecked. `rawKeys: 'common'` compares only keys both have: the ticket detail route need not serve the
 * same further fields as the list the row came from (spec 2.2: "not shown").
 */
export function differingFields(
  spec: TableSpec<unknown>,
  stored: WarehouseRow,
  fresh: WarehouseRow,
  rawKeys: 'all' | 'common',
): FieldDifference[] {
  const out: FieldDifference[] = [];
  for (const c of spec.columns) {
    if (NOT_FIELDS.has(c.name)) continue;
    const [w, s] = [stored[c.name] ?? null, fresh[c.name] ?? null];
    if (canonicalJson(w) !== canonicalJson(s)) out.push({ field: c.name, warehouse: w, source: s });
  }
  const covered = new Set(spec.columns.flatMap((c) => (c.path ? [c.path[0]!] : [])));
  const storedRaw = asObject(stored['_raw']);
  const freshRaw = asObject(fresh['_raw']);
  const keys = new Set([...Object.keys(storedRaw), ...Object.keys(freshRaw)]);
  for (const key of [...keys].sort()) {
    if (covered.has(key)) continue;
    const [inStored, inFresh] = [key in storedRaw, key in freshRaw];
    if (rawKeys === 'common' && !(inStored && inFresh)) continue;
    if (inStored === inFresh && canonicalJson(storedRaw[key]) === canonicalJson(freshRaw[key])) continue;
    out.push({ field: `_raw.${key}`, warehouse: storedRaw[key], source: freshRaw[key] });
  }
  return out;
}

function asObject(value: unknown): Record<string, unknown> {
  const parsed = typeof value === 'string' ? (JSON.parse(value) as unknown) : value;
  return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : {};
}

/** A row as the source serves it now: the parsed item and its JSON, as the page path stores them. */
export interface Served extends ApiRowInput<{ readonly id: string }> {
  readonly raw: Record<string, unknown>;
}

/** One judged row, and what heals it: the served row written over it, or the stored row marked deleted. */
export interface Judged {
  readonly id: string;
  readonly verdict: AuditVerdict;
  readonly differences: readonly FieldDifference[];
  readonly syncedAt: string | null;
  readonly sourceVersion: string | null;
  readonly heal: { readonly write: Served } | { readonly markDeleted: true } | null;
}

/** What the warehouse knew when it last read the rows of a unit. */
export interface JudgeRules {
  readonly rawKeys: 'all' | 'common';
  /** Column holding a row's version in the source's terms (a message: `created_at`). */
  readonly versionColumn: string;
  /** When the warehouse last read this stored row (null: it knows the row is still to be read). */
  readonly readAt: (stored: WarehouseRow) => string | null;
  /**
   * When the warehouse last read the range a served row it lacks belongs to (a pass's high-water mark, a
   * thread's last read); null: never, or it is queued.
   */
  readonly readThrough: string | null;
  /** A difference the warehouse knows will move on without a stamp (a message still in transit). */
  readonly unsettled?: (stored: WarehouseRow, differences: readonly FieldDifference[]) => boolean;
  /**
   * Whether a stored row the source no longer serves was still there at the warehouse's latest read of its
   * range (the ticket sweep listed it, its thread's last read served it): then it went away since. The API
   * gives a deletion no stamp, so that is all there is to tell a deletion since from one the sync missed.
   */
  readonly goneSince?: (stored: WarehouseRow) => boolean;
}

/** `stamp` is later than `read`, or too close before it to be sure the read saw it (SOURCE_GRACE_MS). */
export const later = (stamp: string | null, read: string | null): boolean =>
  stamp !== null && read !== null && Date.parse(stamp) > Date.parse(read) - SOURCE_GRACE_MS;

/**
 * Judges the rows of one unit: `served` (what the page returned) against `stored` (the live rows the
 * warehouse holds for the part of the source the page covered, and for every served id).
 *  - both: `equal`, `differs`, or `changed_since` when the source's version is newer than the warehouse's
 *    read (or the warehouse is the newer one: a replica trailing it), or the warehouse knows the row is to
 *    be read again;
 *  - served only: `missing_in_warehouse`, or `changed_since` when it is newer than the warehouse's read of
 *    its range;
 *  - stored only: `missing_in_source`, or `changed_since` when it was still there at the warehouse's latest
 *    read of its range (goneSince).
 */
export function judge(
  spec: TableSpec<unknown>,
  served: readonly Served[],
  stored: ReadonlyMap<string, WarehouseRow>,
  rules: JudgeRules,
): Judged[] {
  const v = rules.versionColumn;
  const out: Judged[] = [];
  for (const row of served) {
    const fresh = spec.toRow(row);
    const id = String(fresh[spec.primaryKey[0]!]);
    const sourceVersion = (fresh[v] as string | null) ?? null;
    const mine = stored.get(id);
    if (!mine) {
      const notReadYet = rules.readThrough === null || later(sourceVersion, rules.readThrough);
      out.push({
        id,
        verdict: notReadYet ? 'changed_since' : 'missing_in_warehouse',
        differences: [],
        syncedAt: null,
        sourceVersion,
        heal: notReadYet ? null : { write: row },
      });
      continue;
    }
    const differences = differingFields(spec, mine, fresh, rules.rawKeys);
    const readAt = rules.readAt(mine);
    const warehouseAhead = compareVersions((mine[v] as string | null) ?? null, sourceVersion) > 0;
    const verdict: AuditVerdict =
      differences.length === 0
        ? 'equal'
        : readAt === null ||
            later(sourceVersion, readAt) ||
            warehouseAhead ||
            rules.unsettled?.(mine, differences) === true
          ? 'changed_since'
          : 'differs';
    out.push({
      id,
      verdict,
      differences,
      syncedAt: (mine['_synced_at'] as string | null) ?? null,
      sourceVersion,
      heal: verdict === 'differs' ? { write: row } : null,
    });
  }
  const servedIds = new Set(out.map((j) => j.id));
  for (const [id, mine] of stored) {
    if (servedIds.has(id)) continue;
    const syncedAt = (mine['_synced_at'] as string | null) ?? null;
    const goneSince = rules.goneSince?.(mine) === true;
    out.push({
      id,
      verdict: goneSince ? 'changed_since' : 'missing_in_source',
      differences: [],
      syncedAt,
      sourceVersion: (mine[v] as string | null) ?? null,
      heal: !goneSince && spec.tracksDeletion ? { markDeleted: true } : null,
    });
  }
  return out;
}
