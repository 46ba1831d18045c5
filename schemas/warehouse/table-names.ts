import { z } from 'zod';
import { STREAMS, type StreamKind, type StreamName } from '../streams.js';

/**
 * The names of the warehouse's tables — data tables written by `Destination.writeTables`,
 * bookkeeping tables written by the checkpoint, run and batch methods — apart from their specs, so every
 * other module can name a table without loading the catalog.
 */

/**
 * Tables that mirror an API stream item by item: each stream's table (streams/<name>.ts), the tickets and
 * what hangs off them first, then the reference lists (the order docs and tools list them in). The report
 * stream's tables hold snapshots of query results, and are listed with the derived ones.
 */
const KIND_ORDER: readonly StreamKind[] = ['tickets', 'threads', 'export', 'reference', 'report'];
export const STREAM_TABLE_NAMES = KIND_ORDER.flatMap((kind) =>
  Object.values(STREAMS).flatMap((s) => (s.kind === kind && s.warehouse !== null ? [s.table] : [])),
) as StreamTableName[];
type StreamTableName = {
  [S in StreamName]: (typeof STREAMS)[S]['warehouse'] extends null ? never : (typeof STREAMS)[S]['table'];
}[StreamName];

/**
 * Tables built from something else than a stream's items: the report tables (snapshots of query results),
 * `ticket_observations` (what the ticket sweep saw over time), `business_calendar` and `sla_targets` (the
 * business-hours file).
 */
const DERIVED_TABLE_NAMES = [
  'report_snapshots',
  'report_snapshot_values',
  'ticket_observations',
  'business_calendar',
  'sla_targets',
] as const;

export const TABLE_NAMES: [
  StreamTableName | (typeof DERIVED_TABLE_NAMES)[number],
  ...(StreamTableName | (typeof DERIVED_TABLE_NAMES)[number])[],
] = [STREAM_TABLE_NAMES[0] as StreamTableName, ...STREAM_TABLE_NAMES.slice(1), ...DERIVED_TABLE_NAMES];

/** A data table written through `Destination.writeTables`. */
export const TableName = z.enum(TABLE_NAMES);
export type TableName = z.infer<typeof TableName>;

/** Bookkeeping tables, written through the destination's checkpoint, run and batch methods. */
export const SYSTEM_TABLE_NAMES = [
  '_sync_state',
  '_thread_queue',
  '_reread_queue',
  '_sync_runs',
  '_reconciliation',
  '_rejected',
  '_schema_changes',
  '_audit',
] as const;
export type SystemTableName = (typeof SYSTEM_TABLE_NAMES)[number];
