import { type ColumnSpec, SYSTEM_TABLES, TABLE_NAMES } from '../schemas/warehouse.js';
import type { DestinationSettings } from './settings.js';

/**
 * What a destination's DDL creates for one table: its columns and key, and the physical layout each
 * warehouse realises its own way (PostgreSQL: `indexes`; BigQuery: `partitionBy` and `clusterBy`).
 */
export interface TableLayout {
  readonly name: string;
  readonly description: string;
  readonly primaryKey: readonly string[];
  readonly columns: readonly ColumnSpec[];
  readonly indexes: readonly (readonly string[])[];
  readonly partitionBy: string | null;
  readonly clusterBy: readonly string[];
}

/**
 * Secondary indexes of the bookkeeping tables: `status` lists runs by start; each batch looks up the open
 * `_rejected` entries of its table by item id; the thread queue is listed by status, the stale re-read by
 * status and age.
 */
const SYSTEM_INDEXES: { readonly [name: string]: readonly (readonly string[])[] } = {
  _sync_runs: [['started_at']],
  _rejected: [['table_name', 'item_id']],
  _thread_queue: [['status', 'updated_at']],
};

/** Every table of the warehouse: the synced tables (their specs, overrides included), then the bookkeeping. */
export function tableLayouts(settings: DestinationSettings): TableLayout[] {
  return [
    ...TABLE_NAMES.map((name) => settings.spec(name)).map((t) => ({
      name: t.name as string,
      description: t.description,
      primaryKey: t.primaryKey,
      columns: t.columns,
      indexes: t.indexes,
      partitionBy: t.partitionBy,
      clusterBy: t.clusterBy,
    })),
    ...Object.values(SYSTEM_TABLES).map((t) => ({
      name: t.name as string,
      description: t.description,
      primaryKey: t.primaryKey,
      columns: t.columns,
      indexes: SYSTEM_INDEXES[t.name] ?? [],
      partitionBy: null,
      clusterBy: t.primaryKey,
    })),
  ];
}
