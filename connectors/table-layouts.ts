import {
  type ColumnSpec,
  SYSTEM_TABLES,
  scopedColumns,
  scopedKey,
  TABLE_NAMES,
} from '../schemas/warehouse.js';
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

/**
 * Every table of the warehouse: the synced tables (their specs, overrides included), then the bookkeeping.
 * In shared tables every key, index and clustering starts with `workspace_id` (the synced tables' specs
 * already have the column: DestinationSettings.spec; the bookkeeping tables get it here).
 */
export function tableLayouts(settings: DestinationSettings): TableLayout[] {
  const scope = settings.scope;
  const keyed = (key: readonly string[]) => scopedKey(scope, key);
  return [
    ...TABLE_NAMES.map((name) => settings.spec(name)).map((t) => ({
      name: t.name as string,
      description: t.description,
      primaryKey: keyed(t.primaryKey),
      columns: t.columns,
      indexes: t.indexes.map(keyed),
      partitionBy: t.partitionBy,
      // BigQuery clusters by at most four columns: the workspace's, then the table's first three.
      clusterBy: keyed(t.clusterBy).slice(0, 4),
    })),
    ...Object.values(SYSTEM_TABLES).map((t) => ({
      name: t.name as string,
      description: t.description,
      primaryKey: keyed(t.primaryKey),
      columns: scopedColumns(scope, t.columns),
      indexes: (SYSTEM_INDEXES[t.name] ?? []).map(keyed),
      partitionBy: null,
      clusterBy: keyed(t.primaryKey).slice(0, 4),
    })),
  ];
}
