import type { WarehouseRow } from '../../schemas/warehouse/table-spec.js';
import {
  canonicalTimestamp,
  type StoredVersion,
  type TableName,
  type TableSpec,
} from '../../schemas/warehouse.js';
import { BoundedMap } from '../bounded-map.js';
import type { BigQuerySession } from './session.js';

/*
 * The per-run version cache (bench/RESULTS.md §15.2): what a table stores — per live row its
 * version and `_content_hash` — read once per table per run by a table read (tabledata.list: no job, nothing
 * billed), so that a page re-reading rows the warehouse already has stages none of them (a window that only
 * re-read unchanged rows writes nothing and skips its flush), and the tickets' change detection asks no query
 * per page. What it must never skip:
 * - a row marked deleted: the cache holds live rows only, and a deletion of this process (a sweep, a
 *   reference snapshot's unseen rows, a cascade) forgets the table, so the next page reads it again;
 * - an item with an open `_rejected` entry: left out when filled, and forgotten when a page sets it aside —
 *   its next valid version is staged, so the flush resolves the entry;
 * - a full refresh's rows (repair): never compared.
 * What this process stages is remembered as what the table will store after the flush (the merge keeps the
 * latest version, so an older stored one only makes the cache say "changed" — staged, harmless).
 * Another worker process's deletion after the fill is not seen until the next run's fill: the race the
 * tickets' `storedVersions` read had already (a row read as live, then marked deleted, then staged as seen).
 */

interface TableVersions {
  /** Null: the table is larger than the cache holds; every row is staged, versions are queried. */
  readonly versions: Map<string, StoredVersion> | null;
}

/** How much the cache holds, and how it reads (tests make both small). */
export interface VersionCacheLimits {
  /**
   * Rows of one table the cache holds at most (~100 bytes each): a worker's memory must not grow with the
   * workspace. A larger table is not cached: the page path stages every row it reads.
   */
  readonly maxRows: number;
  /** Rows per table-read request. */
  readonly pageRows: number;
}

export const DEFAULT_VERSION_CACHE_LIMITS: VersionCacheLimits = { maxRows: 250_000, pageRows: 10_000 };

/** Runs whose caches are kept at once (a worker serves one run at a time, rarely two). */
const RUNS_KEPT = 2;

export class RunVersionCache {
  /** run id → table → what it stores. */
  readonly #runs = new BoundedMap<string, Map<TableName, Promise<TableVersions>>>(RUNS_KEPT);

  constructor(
    private readonly session: BigQuerySession,
    private readonly limits: VersionCacheLimits = DEFAULT_VERSION_CACHE_LIMITS,
  ) {}

  /** Whether the cache can answer for `spec` (a single-column key, a content hash). */
  static serves(spec: TableSpec<unknown>): boolean {
    return spec.primaryKey.length === 1 && spec.columns.some((c) => c.name === '_content_hash');
  }

  /** What the table stores for `ids` (live rows only), as `storedVersions` answers; null: not cached. */
  async versions(runId: string, spec: TableSpec<unknown>, ids: readonly string[]) {
    const { versions } = await this.#table(runId, spec);
    if (versions === null) return null;
    const out = new Map<string, StoredVersion>();
    for (const id of ids) {
      const stored = versions.get(id);
      if (stored) out.set(id, stored);
    }
    return out;
  }

  /** The rows the table already stores as they are (same version, same content): nothing to stage. */
  async unchanged(runId: string, spec: TableSpec<unknown>, rows: readonly WarehouseRow[]) {
    const { versions } = await this.#table(runId, spec);
    const same = new Set<WarehouseRow>();
    if (versions === null) return same;
    for (const row of rows) {
      const stored = versions.get(idOf(spec, row));
      if (
        stored !== undefined &&
        stored.contentHash !== null &&
        stored.contentHash === row['_content_hash'] &&
        stored.version === versionOf(spec, row)
      )
        same.add(row);
    }
    return same;
  }

  /** Rows staged by this process: what the table stores after the flush. */
  async remember(runId: string, spec: TableSpec<unknown>, rows: readonly WarehouseRow[]) {
    if (rows.length === 0) return;
    const { versions } = await this.#table(runId, spec);
    if (versions === null) return;
    for (const row of rows)
      versions.set(idOf(spec, row), {
        version: versionOf(spec, row),
        contentHash: (row['_content_hash'] as string | null) ?? null,
      });
  }

  /** Items set aside: their entries are open, their next version must be staged. */
  forgetIds(table: TableName, ids: readonly string[]): void {
    for (const tables of this.#runs.values())
      void tables.get(table)?.then(({ versions }) => {
        for (const id of ids) versions?.delete(id);
      });
  }

  /** A deletion of this process marked rows of `table`: the next page reads it again. */
  forgetTable(table: TableName): void {
    for (const tables of this.#runs.values()) tables.delete(table);
  }

  #table(runId: string, spec: TableSpec<unknown>): Promise<TableVersions> {
    let tables = this.#runs.get(runId);
    if (!tables) {
      tables = new Map();
      this.#runs.set(runId, tables);
    }
    const table = spec.name as TableName;
    let filled = tables.get(table);
    if (!filled) {
      filled = this.#fill(spec);
      tables.set(table, filled);
      // A failed read is not kept: the next page reads again.
      filled.catch(() => {
        if (tables.get(table) === filled) tables.delete(table);
      });
    }
    return filled;
  }

  /** One table read of the table's live rows, then one of `_rejected`: its open entries are left out. */
  async #fill(spec: TableSpec<unknown>): Promise<TableVersions> {
    const key = spec.primaryKey[0]!;
    const fields = [key, '_content_hash'];
    if (spec.versionColumn) fields.push(spec.versionColumn);
    if (spec.tracksDeletion) fields.push('_deleted_at');
    const rows = await this.session.readTableUpTo(
      spec.name,
      fields,
      this.limits.maxRows,
      this.limits.pageRows,
    );
    if (rows === null) return { versions: null };
    const versions = new Map<string, StoredVersion>();
    for (const row of rows) {
      if (spec.tracksDeletion && row['_deleted_at'] != null) continue;
      versions.set(String(row[key]), {
        version: versionOf(spec, row),
        contentHash: (row['_content_hash'] as string | null) ?? null,
      });
    }
    for (const entry of await this.session.readTable('_rejected', ['table_name', 'item_id', 'resolved_at']))
      if (entry['table_name'] === spec.name && entry['resolved_at'] == null)
        versions.delete(String(entry['item_id']));
    return { versions };
  }
}

const idOf = (spec: TableSpec<unknown>, row: WarehouseRow) => String(row[spec.primaryKey[0]!]);

/** The row's version as `storedVersions` gives it: a canonical timestamp, or null (content-rule tables). */
function versionOf(spec: TableSpec<unknown>, row: Record<string, unknown>): string | null {
  if (!spec.versionColumn) return null;
  const v = row[spec.versionColumn];
  return v === null || v === undefined ? null : canonicalTimestamp(String(v));
}
