import type { CheckpointUpdate, TableSpec } from '../../schemas/warehouse.js';
import type { DeletionCascade, DeletionRange, UnreadGuard } from '../destination.js';
import { DestinationError } from '../errors.js';
import type { Bind, WarehouseDialect } from './dialect.js';

/*
 * Which rows a deletion marks, written once against the dialect. Each warehouse runs the conditions its own
 * way (PostgreSQL: an UPDATE under the table's lock; BigQuery: a script counting inside its transaction).
 */

type Columns = { name: string; columns: readonly { name: string; type: string }[] };

/** Checks that an unread guard names an integer column (one that can hold a ticket number). */
export function unreadColumn(spec: Columns, guard: UnreadGuard): string {
  const column = spec.columns.find((c) => c.name === guard.column);
  if (column?.type !== 'integer') {
    throw new DestinationError(
      `${spec.name}.${guard.column} is not an integer column; cannot match it to the thread queue's ticket numbers`,
    );
  }
  return column.name;
}

/** Checks that a deletion range names a timestamp column of the table; returns the column name. */
export function rangeColumn(spec: Columns, within: DeletionRange): string {
  const column = spec.columns.find((c) => c.name === within.column);
  if (column?.type !== 'timestamp') {
    throw new DestinationError(
      `${spec.name}.${within.column} is not a timestamp column; cannot bound a deletion by it`,
    );
  }
  return column.name;
}

/** Checks that a cascade's foreign key is a column of the child table; returns the column name. */
export function cascadeColumn(
  child: { name: string; columns: readonly { name: string }[] },
  cascade: DeletionCascade,
): string {
  const column = child.columns.find((c) => c.name === cascade.foreignKey);
  if (!column) throw new DestinationError(`${child.name}.${cascade.foreignKey} does not exist`);
  return column.name;
}

/** Rows to mark deleted, as a condition on the table aliased `t`, its values bound by the runner's `bind`. */
export type DeletionWhere = (d: WarehouseDialect, bind: Bind) => string;

/** Live rows among `ids` (an empty list selects nothing). */
export function liveIdsWhere(spec: TableSpec<unknown>, ids: readonly string[]): DeletionWhere {
  const key = spec.primaryKey[0]!;
  return (d, bind) =>
    ids.length === 0
      ? 'FALSE'
      : `${d.isIn(`t.${d.ident(key)}`, bind(ids, 'string_list'))} AND t.${d.ident('_deleted_at')} IS NULL`;
}

/**
 * Live rows not received since `since`, only inside `within` when given, and never rows of a scope the
 * refresh did not manage to read (`unlessUnread`). The columns are checked here, before anything runs.
 */
export function notSeenSinceWhere(
  spec: TableSpec<unknown>,
  since: Date,
  within: DeletionRange | undefined,
  unlessUnread: UnreadGuard | undefined,
): DeletionWhere {
  const range = within && { column: rangeColumn(spec, within), from: within.from };
  const unread = unlessUnread && { column: unreadColumn(spec, unlessUnread) };
  return (d, bind) => {
    const conditions = [
      `t.${d.ident('_synced_at')} < ${bind(since, 'timestamp')}`,
      `t.${d.ident('_deleted_at')} IS NULL`,
    ];
    if (range) conditions.push(`t.${d.ident(range.column)} >= ${bind(range.from, 'timestamp')}`);
    // Not read is not gone: a row of a thread whose read is queued, running or failed keeps living.
    if (unread)
      conditions.push(`NOT EXISTS (SELECT 1 FROM ${d.table('_thread_queue')} q
        WHERE q.ticket_number = t.${d.ident(unread.column)} AND q.status <> 'complete')`);
    return conditions.join(' AND ');
  };
}

/**
 * The two conditions of a cascade on the child table (unaliased): rows to mark, rows to revive (or null);
 * and the columns they compare, for a warehouse that can tell on a table read that neither selects a row.
 */
export interface CascadeConditions {
  readonly mark: string;
  readonly revive: string | null;
  readonly columns: { readonly foreignKey: string; readonly parent: string; readonly parentKey: string };
}

/** Child rows whose parent is deleted (to mark), and, with `revive`, deleted ones whose parent is live. */
export function cascadeConditions(
  d: WarehouseDialect,
  child: TableSpec<unknown>,
  parent: TableSpec<unknown>,
  cascade: DeletionCascade,
): CascadeConditions {
  const foreignKey = cascadeColumn(child, cascade);
  const fk = d.ident(foreignKey);
  const deletedAt = d.ident('_deleted_at');
  const parents = (deleted: boolean) =>
    `SELECT ${d.ident(parent.primaryKey[0]!)} FROM ${d.table(parent.name)} WHERE ${deletedAt} IS ${deleted ? 'NOT ' : ''}NULL`;
  return {
    mark: `${deletedAt} IS NULL AND ${fk} IN (${parents(true)})`,
    revive: cascade.revive ? `${deletedAt} IS NOT NULL AND ${fk} IN (${parents(false)})` : null,
    columns: {
      foreignKey,
      parent: parent.name,
      parentKey: parent.primaryKey[0]!,
    },
  };
}

/**
 * A superset of the rows a deletion's `where` selects, simple enough to test on the table's key, `_synced_at`,
 * `_deleted_at` and the range's column: live rows not received since `since` (inside `within`, when the
 * refresh re-read only a range), or live rows among `ids`. A warehouse that
 * reads tables for nothing (BigQuery's table reads) can tell from it that a deletion has nothing to mark
 * without a query, which bills 10 MB even when it finds nothing.
 */
export type DeletionCandidates =
  | { readonly kind: 'not_seen_since'; readonly since: Date; readonly within?: DeletionRange }
  | { readonly kind: 'ids'; readonly ids: readonly string[] };

/** What a warehouse's write path is asked to mark: the rows `where` selects, with a checkpoint, atomically. */
export interface DeletionRequest {
  readonly spec: TableSpec<unknown>;
  readonly where: DeletionWhere;
  /** Every row `where` selects is one of these (see DeletionCandidates). */
  readonly candidates: DeletionCandidates;
  readonly deletedAt: Date;
  readonly checkpoint: CheckpointUpdate | undefined;
  /** The Destination method asked, for error messages. */
  readonly operation: 'markDeleted' | 'markDeletedNotSeenSince';
}
