import { z } from 'zod';

/**
 * The names of the warehouse's tables — data tables written by `Destination.writeBatch`, bookkeeping tables
 * written by the checkpoint, run and batch methods — apart from their specs, so every other module can name
 * a table without loading the catalog.
 */

export const TABLE_NAMES = [
  'tickets',
  'ticket_messages',
  'csat_surveys',
  'agent_sessions',
  'views',
  'tags',
  'teams',
  'agents',
  'metric_catalog',
  'report_snapshots',
  'report_snapshot_values',
  'ticket_observations',
  'business_calendar',
  'sla_targets',
] as const;
/** A data table written through `Destination.writeBatch`. */
export const TableName = z.enum(TABLE_NAMES);

/**
 * Tables that mirror an API stream item by item (the report tables hold snapshots of query results, and
 * `ticket_observations` what the ticket sweep saw over time, `business_calendar` and `sla_targets` the
 * business-hours file).
 */
const DERIVED_TABLE_NAMES = [
  'report_snapshots',
  'report_snapshot_values',
  'ticket_observations',
  'business_calendar',
  'sla_targets',
] as const;
export const STREAM_TABLE_NAMES = TABLE_NAMES.filter(
  (t): t is Exclude<(typeof TABLE_NAMES)[number], (typeof DERIVED_TABLE_NAMES)[number]> =>
    !(DERIVED_TABLE_NAMES as readonly string[]).includes(t),
);
export type TableName = z.infer<typeof TableName>;

/** Bookkeeping tables, written through the destination's checkpoint, run and batch methods. */
export const SYSTEM_TABLE_NAMES = [
  '_sync_state',
  '_thread_queue',
  '_sync_runs',
  '_reconciliation',
  '_rejected',
  '_schema_changes',
  '_audit',
] as const;
export type SystemTableName = (typeof SYSTEM_TABLE_NAMES)[number];
