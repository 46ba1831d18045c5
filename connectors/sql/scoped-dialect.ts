import { CUSTOM_FIELD_LABELS_VIEW } from '../../schemas/custom-fields-view.js';
import {
  scopedKey,
  sharesTables,
  type WarehouseScope,
  WORKSPACE_COLUMN,
  WORKSPACE_ID_COLUMN,
} from '../../schemas/warehouse.js';
import type { ViewColumn, ViewSpec } from '../../schemas/warehouse-views.js';
import type { WarehouseDialect } from './dialect.js';

/**
 * The relations of the deployment rather than of each workspace's rows: the column list of
 * ticket_custom_fields, whose columns every workspace shares. Shared tables neither split them by
 * `workspace_id` (viewSql) nor read them as a workspace's rows (`table`).
 */
export const EVERY_WORKSPACE: ReadonlySet<string> = new Set([CUSTOM_FIELD_LABELS_VIEW]);

/**
 * A warehouse's dialect for one workspace of a shared-tables deployment: the one place the bookkeeping SQL
 * (sql/state-reads.ts, sql/ledger.ts, sql/audit.ts, queries/, …) is kept to the workspace's rows, without a
 * statement naming `workspace_id`:
 *  - `table` reads the workspace's rows of a table (a subquery: the planner folds it into the statement,
 *    where the key's leading `workspace_id` serves it);
 *  - `upsert` and `mergeSource` write rows of the workspace, keyed by `workspace_id` first, so no key ever
 *    matches another workspace's row;
 *  - `target` stays the table itself (DDL, a write statement's target), and `ownRows` is the condition a
 *    write statement adds, so an UPDATE cannot reach another workspace's rows.
 * A deployment with a schema per workspace gets the dialect as it is.
 *
 * A write statement naming `table` as its target fails (an UPDATE of a subquery is no statement), so a write
 * path that forgot the scope fails loudly rather than touching other workspaces' rows.
 */
export function scopedDialect(dialect: WarehouseDialect, scope: WarehouseScope): WarehouseDialect {
  if (!sharesTables(scope)) return dialect;
  const column = dialect.ident(WORKSPACE_COLUMN);
  // The workspace id is a slug (schemas/workspaces.ts), written as the dialect's string literal all the same.
  const workspace = dialect.string(scope.workspace);
  const ownRows = (alias?: string) => ` AND ${alias ? `${alias}.` : ''}${column} = ${workspace}`;
  return {
    ...dialect,
    table: (name) =>
      EVERY_WORKSPACE.has(name)
        ? dialect.target(name)
        : `(SELECT * FROM ${dialect.target(name)} WHERE ${column} = ${workspace})`,
    ownRows,
    storedKey: (key) => scopedKey(scope, key),
    upsert: (table, key, columns, rows) =>
      dialect.upsert(
        table,
        scopedKey(scope, key),
        [WORKSPACE_COLUMN, ...columns],
        rows.map((values) => [workspace, ...values]),
      ),
    mergeSource: (table, key, columns, source, update) =>
      dialect.mergeSource(
        table,
        scopedKey(scope, key),
        [WORKSPACE_COLUMN, ...columns],
        `SELECT ${workspace} AS ${column}, W.* FROM (${source}) AS W`,
        update,
      ),
  };
}

/**
 * A view's SELECT as `target`'s schema holds it. In shared tables a view is every workspace's: its SELECT
 * runs once per workspace (a LATERAL subquery) with every table it reads kept to that workspace's rows, so
 * each join, window and aggregate of it stays within one workspace without the view's SQL naming
 * `workspace_id`, and the view's first column is `workspace_id`. The workspaces are those with a run in
 * `_sync_runs` (a workspace's rows are written by its runs, each recorded there first). PostgreSQL's: BigQuery
 * has no LATERAL, and runs the same per-workspace SELECT as a table function instead (bigquery/ddl.ts).
 */
export function viewSql(dialect: WarehouseDialect, scope: WarehouseScope, view: ViewSpec): string {
  if (!sharesTables(scope) || EVERY_WORKSPACE.has(view.name)) return view.sql(dialect);
  const column = dialect.ident(WORKSPACE_COLUMN);
  return `SELECT ws__.${column}, v__.*
FROM (SELECT DISTINCT ${column} FROM ${dialect.target('_sync_runs')}) AS ws__
CROSS JOIN LATERAL (
${viewOfOneWorkspace(dialect, view, `ws__.${column}`)}
) AS v__`;
}

/**
 * A view's SELECT over one workspace's rows of shared tables: every table it reads kept to the rows whose
 * `workspace_id` is `workspace` (SQL: a correlated column, a table function's parameter), so each join,
 * window and aggregate of it stays within that workspace.
 */
export function viewOfOneWorkspace(dialect: WarehouseDialect, view: ViewSpec, workspace: string): string {
  const column = dialect.ident(WORKSPACE_COLUMN);
  return view.sql({
    ...dialect,
    table: (name) => `(SELECT * FROM ${dialect.target(name)} WHERE ${column} = ${workspace})`,
  });
}

/** A view's columns as `viewSql` creates it: `workspace_id` first in shared tables. */
export function viewColumnsOf(scope: WarehouseScope, view: ViewSpec): readonly ViewColumn[] {
  return sharesTables(scope) && !EVERY_WORKSPACE.has(view.name)
    ? [
        {
          name: WORKSPACE_COLUMN,
          type: WORKSPACE_ID_COLUMN.type,
          description: WORKSPACE_ID_COLUMN.description,
        },
        ...view.columns,
      ]
    : view.columns;
}
