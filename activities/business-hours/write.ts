import { createHash } from 'node:crypto';
import type { Destination } from '../../connectors/destination.js';
import { liveRowCount } from '../../connectors/queries/row-counts.js';
import { oldestTicketCreatedAt } from '../../connectors/queries/tickets.js';
import type { BusinessHoursFile } from '../../schemas/business-hours.js';
import { PRIORITIES } from '../../schemas/business-hours.js';
import type { BusinessCalendarRow, SlaTargetRow } from '../../schemas/warehouse/business-calendar.js';
import { canonicalJson } from '../../schemas/warehouse/values.js';
import { buildCalendar } from './calendar.js';

const DAY_MS = 86_400_000;
/** How far back the calendar reaches at least, whatever the oldest ticket: a first run has none yet. */
export const CALENDAR_DAYS_BACK = 400;
/** How far after the run it reaches: open tickets keep accruing business time until the next run. */
export const CALENDAR_DAYS_AHEAD = 30;

/**
 * Rewrites `business_calendar` and `sla_targets` from the business-hours file: every interval from the
 * oldest ticket (at least CALENDAR_DAYS_BACK days back) to CALENDAR_DAYS_AHEAD days after `now`, and a row
 * per priority with a target. Rows this write did not yield (the file changed, or is gone) get `_deleted_at`,
 * so the views see exactly the current file's calendar — none at all without a file.
 */
export async function writeBusinessCalendar(
  destination: Destination,
  hours: BusinessHoursFile | undefined,
  now: Date,
): Promise<{ intervals: number; targets: number }> {
  // Rows not received since this instant (the clock that stamps _synced_at) are not the current file's.
  let since: Date;
  let written = { intervals: 0, targets: 0 };
  if (hours) {
    since = await destination.currentTime();
    const oldest = await oldestTicketCreatedAt(destination);
    const floor = now.getTime() - CALENDAR_DAYS_BACK * DAY_MS;
    const oldestMs = oldest ? new Date(oldest).getTime() : floor;
    const from = Math.min(oldestMs, floor);
    const to = now.getTime() + CALENDAR_DAYS_AHEAD * DAY_MS;
    const calendarHash = createHash('sha256').update(canonicalJson(hours)).digest('hex');
    const intervals: BusinessCalendarRow[] = buildCalendar(hours, from, to).map((i) => ({
      start_at: new Date(i.startMs).toISOString(),
      end_at: new Date(i.endMs).toISOString(),
      local_date: i.localDate,
      timezone: hours.timezone,
      seconds: (i.endMs - i.startMs) / 1000,
      calendar_hash: calendarHash,
    }));
    const targets: SlaTargetRow[] = PRIORITIES.flatMap((priority) => {
      const t = hours.targets[priority];
      if (!t) return [];
      return [
        {
          priority,
          first_reply_target: t.first_reply?.iso ?? null,
          first_reply_target_seconds: t.first_reply?.seconds ?? null,
          resolution_target: t.resolution?.iso ?? null,
          resolution_target_seconds: t.resolution?.seconds ?? null,
          calendar_hash: calendarHash,
        },
      ];
    });
    await destination.writeTables([
      { table: 'business_calendar', rows: intervals },
      { table: 'sla_targets', rows: targets },
    ]);
    written = { intervals: intervals.length, targets: targets.length };
  } else {
    // Without a file there is nothing to write; a calendar left by an earlier file is retired, and a
    // warehouse that never had one costs one read, not two mutating statements, per run.
    if (((await liveRowCount(destination, ['business_calendar', 'sla_targets'])) ?? 0) === 0) return written;
    since = await destination.currentTime();
  }
  await destination.markDeleted({ table: 'business_calendar', notSeenSince: since }, now);
  await destination.markDeleted({ table: 'sla_targets', notSeenSince: since }, now);
  return written;
}
