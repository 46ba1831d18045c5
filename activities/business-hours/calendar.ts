import { DateTime } from 'luxon';
import type { BusinessHoursFile } from '../../schemas/business-hours.js';
import { WEEKDAYS } from '../../schemas/business-hours.js';

/** A working interval, UTC instants in milliseconds: [startMs, endMs). */
export interface WorkingInterval {
  readonly startMs: number;
  readonly endMs: number;
  /** The local date it belongs to (YYYY-MM-DD in the file's time zone). */
  readonly localDate: string;
}

/**
 * The working intervals of `hours` that overlap [fromMs, toMs), in UTC, sorted and disjoint. Each local day's
 * wall-clock intervals are converted in the file's time zone by luxon, so a day with a DST change keeps its
 * local hours (and has an hour more or less of them in UTC terms); a wall-clock time the change skips is read
 * as the first instant after the gap. Holidays have no intervals.
 */
export function buildCalendar(hours: BusinessHoursFile, fromMs: number, toMs: number): WorkingInterval[] {
  const zone = hours.timezone;
  const holidays = new Set(hours.holidays);
  const out: WorkingInterval[] = [];
  // A day before and after: a local day's hours can fall on the neighbouring UTC day.
  let day = DateTime.fromMillis(fromMs, { zone }).startOf('day').minus({ days: 1 });
  const last = DateTime.fromMillis(toMs, { zone }).startOf('day').plus({ days: 1 });
  while (day <= last) {
    const localDate = day.toISODate()!;
    const intervals = holidays.has(localDate) ? [] : (hours.hours[WEEKDAYS[day.weekday - 1]!] ?? []);
    for (const { startMinute, endMinute } of [...intervals].sort((a, b) => a.startMinute - b.startMinute)) {
      const startMs = wallClock(day, startMinute);
      const endMs = wallClock(day, endMinute);
      if (endMs <= startMs || endMs <= fromMs || startMs >= toMs) continue;
      out.push({ startMs, endMs, localDate });
    }
    day = day.plus({ days: 1 }).startOf('day');
  }
  return out;
}

/** The instant of a local wall-clock minute of `day` (24:00 is the next day's midnight). */
function wallClock(day: DateTime, minute: number): number {
  if (minute === 24 * 60) return day.plus({ days: 1 }).startOf('day').toMillis();
  return day
    .set({ hour: Math.floor(minute / 60), minute: minute % 60, second: 0, millisecond: 0 })
    .toMillis();
}

/** Business seconds in [startMs, endMs): the overlap with the calendar's intervals (what the view computes). */
export function businessSeconds(
  calendar: readonly WorkingInterval[],
  startMs: number,
  endMs: number,
): number {
  let ms = 0;
  for (const i of calendar) {
    const overlap = Math.min(i.endMs, endMs) - Math.max(i.startMs, startMs);
    if (overlap > 0) ms += overlap;
  }
  return ms / 1000;
}
