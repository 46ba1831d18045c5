import { DateTime, IANAZone } from 'luxon';
import type { CompareMode, Grain, ParsedQuery } from './parser.js';

/**
 * Period arithmetic in the request's IANA zone with luxon: calendar boundaries (day, ISO week from Monday,
 * month) are taken in the zone, so a day across a DST change is 23 or 25 hours long. All ranges are half-open
 * `[start, end)` in epoch ms.
 */
export interface Range {
  start: number;
  end: number;
}

export function isValidZone(zone: string): boolean {
  return IANAZone.isValidZone(zone);
}

const dt = (ms: number, zone: string) => DateTime.fromMillis(ms, { zone });

/** The query's main period. `unit` is the calendar unit previous_period steps by (null = its own length in days). */
export function resolvePeriod(
  p: ParsedQuery['period'],
  zone: string,
  now: number,
): { range: Range; unit: 'day' | 'week' | 'month' | null; days: number } {
  if (p.kind === 'range') {
    const start = DateTime.fromISO(p.since, { zone }).startOf('day');
    const end = DateTime.fromISO(p.until, { zone }).startOf('day').plus({ days: 1 });
    const days = Math.round(end.diff(start, 'days').days);
    return { range: { start: start.toMillis(), end: end.toMillis() }, unit: null, days };
  }
  const n = dt(now, zone);
  const day = n.startOf('day');
  const week = n.startOf('week');
  const month = n.startOf('month');
  const r = (a: DateTime, b: DateTime) => ({ start: a.toMillis(), end: b.toMillis() });
  switch (p.period) {
    case 'today':
      return { range: r(day, day.plus({ days: 1 })), unit: 'day', days: 1 };
    case 'yesterday':
      return { range: r(day.minus({ days: 1 }), day), unit: 'day', days: 1 };
    case 'this_week':
      return { range: r(week, week.plus({ weeks: 1 })), unit: 'week', days: 7 };
    case 'last_week':
      return { range: r(week.minus({ weeks: 1 }), week), unit: 'week', days: 7 };
    case 'this_month':
      return { range: r(month, month.plus({ months: 1 })), unit: 'month', days: month.daysInMonth ?? 30 };
    case 'last_month':
      return {
        range: r(month.minus({ months: 1 }), month),
        unit: 'month',
        days: month.minus({ months: 1 }).daysInMonth ?? 30,
      };
  }
}

/**
 * The comparison period: previous_period is the same calendar unit one step back (or, for SINCE … UNTIL, the same
 * number of calendar days immediately before); previous_year is the same calendar span one year earlier.
 */
export function comparisonRange(
  main: { range: Range; unit: 'day' | 'week' | 'month' | null; days: number },
  mode: CompareMode,
  zone: string,
): Range {
  const s = dt(main.range.start, zone);
  const e = dt(main.range.end, zone);
  if (mode === 'previous_year') {
    return { start: s.minus({ years: 1 }).toMillis(), end: e.minus({ years: 1 }).toMillis() };
  }
  const step = main.unit === null ? { days: main.days } : { [`${main.unit}s`]: 1 };
  return { start: s.minus(step).toMillis(), end: e.minus(step).toMillis() };
}

export interface Bucket {
  start: number;
  end: number;
  /** ISO 8601 instant with the zone's offset at the bucket start. */
  date: string;
  label: string;
}

const LABEL: Record<Grain, string> = {
  hour: 'd LLL yyyy, HH:mm',
  day: 'd LLL yyyy',
  week: "'Week of' d LLL yyyy",
  month: 'LLLL yyyy',
};

/** Consecutive grain buckets covering `range` (the first and last may be clipped to it). */
export function buckets(range: Range, grain: Grain, zone: string): Bucket[] {
  const out: Bucket[] = [];
  let cur = dt(range.start, zone).startOf(grain);
  while (cur.toMillis() < range.end) {
    const next = cur.plus({ [`${grain}s`]: 1 });
    const start = Math.max(cur.toMillis(), range.start);
    out.push({
      start,
      end: Math.min(next.toMillis(), range.end),
      date: cur.toISO({ suppressMilliseconds: true }) ?? '',
      label: cur.setLocale('en').toFormat(LABEL[grain]),
    });
    cur = next;
  }
  return out;
}
