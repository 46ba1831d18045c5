import { z } from 'zod';
import { Priority } from '../api/common.js';
import { Timestamp } from '../api/index.js';
import { deriveColumns } from './derive.js';
import { tableSpec, type WarehouseRow } from './table-spec.js';
import { storableJson, toColumnValue } from './values.js';

/**
 * The tables the business-hours file (SYNC_BUSINESS_HOURS) becomes: `business_calendar`, its working intervals
 * in UTC, and `sla_targets`, its targets per priority. The sync rewrites both whole every run: rows the file no
 * longer yields get `_deleted_at`, so the views read the live rows only. Without the file both have no live
 * rows and ticket_metrics' business-time columns are null.
 */

export const BusinessCalendarRow = z.object({
  start_at: Timestamp,
  end_at: Timestamp,
  local_date: z.string(),
  timezone: z.string(),
  seconds: z.number(),
  calendar_hash: z.string(),
});
export type BusinessCalendarRow = z.infer<typeof BusinessCalendarRow>;

const calendarColumns = deriveColumns('business_calendar', BusinessCalendarRow, {
  descriptions: {
    start_at: 'Start of a working interval (UTC). Primary key.',
    end_at: 'End of the interval (UTC), exclusive.',
    local_date: 'The local date (YYYY-MM-DD in timezone) whose hours the interval is.',
    timezone: 'The IANA time zone of the business-hours file.',
    seconds: 'Length of the interval in seconds (a DST change shortens or lengthens a local day).',
    calendar_hash:
      'SHA-256 (hex) of the business-hours file as validated: rows of one version of the file share it.',
  },
});

export const businessCalendarTable = tableSpec<BusinessCalendarRow>(
  {
    name: 'business_calendar',
    description:
      "The support team's working intervals in UTC, from the business-hours file (SYNC_BUSINESS_HOURS): each weekday's local hours converted in the file's time zone (DST-correct), holidays left out. Covers from the oldest ticket (at least 30 days back) to 30 days after the run; rewritten whole every run, rows the file no longer yields marked with _deleted_at. ticket_metrics counts business seconds as the overlap of a span with the live intervals.",
    primaryKey: ['start_at'],
    merge: { kind: 'content' },
    tracksDeletion: true,
    inputSchema: BusinessCalendarRow,
    indexes: [['end_at']],
    partitionBy: null,
    clusterBy: ['start_at'],
  },
  calendarColumns,
  (input) => rowOf(calendarColumns, input),
);

export const SlaTargetRow = z.object({
  priority: Priority,
  first_reply_target: z.string().nullable(),
  first_reply_target_seconds: z.number().int().nullable(),
  resolution_target: z.string().nullable(),
  resolution_target_seconds: z.number().int().nullable(),
  calendar_hash: z.string(),
});
export type SlaTargetRow = z.infer<typeof SlaTargetRow>;

const targetColumns = deriveColumns('sla_targets', SlaTargetRow, {
  descriptions: {
    priority: 'Ticket priority. Primary key.',
    first_reply_target: 'Target for the first public reply, as written (ISO 8601 duration of business time).',
    first_reply_target_seconds: 'The same in business seconds.',
    resolution_target: 'Target for the full resolution, as written (ISO 8601 duration of business time).',
    resolution_target_seconds: 'The same in business seconds.',
    calendar_hash: 'SHA-256 (hex) of the business-hours file as validated.',
  },
});

export const slaTargetsTable = tableSpec<SlaTargetRow>(
  {
    name: 'sla_targets',
    description:
      'Targets per priority from the business-hours file (SYNC_BUSINESS_HOURS), in business time: ticket_metrics flags a first reply or resolution beyond them. Rewritten whole every run; a priority the file no longer names is marked with _deleted_at.',
    primaryKey: ['priority'],
    merge: { kind: 'content' },
    tracksDeletion: true,
    inputSchema: SlaTargetRow,
    indexes: [],
    partitionBy: null,
    clusterBy: [],
  },
  targetColumns,
  (input) => rowOf(targetColumns, input),
);

function rowOf(columns: ReturnType<typeof deriveColumns>, input: object): WarehouseRow {
  const row: WarehouseRow = {};
  for (const c of columns) row[c.name] = toColumnValue(c.type, (input as Record<string, unknown>)[c.name]);
  // No API item stands behind these rows: `_raw` keeps the row as written.
  row['_raw'] = storableJson(input);
  return row;
}
