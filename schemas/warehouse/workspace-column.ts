import { z } from 'zod';
import { DEFAULT_WORKSPACE, WarehouseLayout, WorkspaceId } from '../workspaces.js';
import { type ColumnSpec, column } from './derive.js';
import type { TableSpec } from './table-spec.js';

/**
 * The shared-tables layout (SYNC_WAREHOUSE_LAYOUT=shared-tables): every workspace of a deployment writes the
 * same tables, told apart by a `workspace_id` column that leads every table's key. A destination is built
 * for one workspace (its WarehouseScope); what a table is in that layout derives here, once, from the spec
 * of the table as a schema-per-workspace deployment has it — which stays exactly as it was.
 */

export const WORKSPACE_COLUMN = 'workspace_id';

export const WORKSPACE_ID_COLUMN: ColumnSpec = column(
  WORKSPACE_COLUMN,
  'string',
  false,
  'The workspace (SYNC_WORKSPACE, an id of SYNC_WORKSPACES_FILE) the row belongs to: ids and ticket numbers of different workspaces collide, so it leads the key (shared-tables layout only).',
);

/** Where a destination writes: its workspace, and whether that workspace shares its tables with others. */
export const WarehouseScope = z.object({ workspace: WorkspaceId, layout: WarehouseLayout }).readonly();
export type WarehouseScope = z.infer<typeof WarehouseScope>;

/** A deployment of one workspace, as it has always been. */
export const SCHEMA_PER_WORKSPACE: WarehouseScope = {
  workspace: DEFAULT_WORKSPACE,
  layout: 'schema-per-workspace',
};

/** Whether the scope's tables carry `workspace_id`. */
export const sharesTables = (scope: WarehouseScope): boolean => scope.layout === 'shared-tables';

/**
 * A key (primary key, merge key, index, clustering) as the warehouse holds it: `workspace_id` first in
 * shared tables, so no key ever matches a row of another workspace and each workspace's rows sit together.
 */
export function scopedKey(scope: WarehouseScope, key: readonly string[]): readonly string[] {
  return sharesTables(scope) ? [WORKSPACE_COLUMN, ...key] : key;
}

/** A table's columns as stored: `workspace_id` first in shared tables. */
export function scopedColumns(scope: WarehouseScope, columns: readonly ColumnSpec[]): readonly ColumnSpec[] {
  return sharesTables(scope) ? [WORKSPACE_ID_COLUMN, ...columns] : columns;
}

/**
 * A synced table's spec as the scope writes it. In shared tables its rows carry their workspace: `toRow`
 * adds it after the content hash is taken (the hash is the row's content, the same in either layout), and
 * the row schema requires it to be the scope's, so a row of another workspace cannot be written. The key
 * stays the id within the workspace (`primaryKey`, what ids mean to every reader); the SQL that matches rows
 * by key puts `workspace_id` in front of it (scopedKey).
 */
export function scopedSpec(scope: WarehouseScope, spec: TableSpec<unknown>): TableSpec<unknown> {
  if (!sharesTables(scope)) return spec;
  const { workspace } = scope;
  return {
    ...spec,
    columns: scopedColumns(scope, spec.columns),
    rowSchema: spec.rowSchema.extend({ [WORKSPACE_COLUMN]: z.literal(workspace) }),
    toRow: (input) => ({ [WORKSPACE_COLUMN]: workspace, ...spec.toRow(input) }),
  };
}
