import { Duration, IANAZone } from 'luxon';
import { z } from 'zod';
import { Priority } from './api/index.js';

/**
 * The business-hours file (SYNC_BUSINESS_HOURS): the support team's time zone, its weekly hours, its holidays
 * and its targets per priority. The sync turns it into the tables `business_calendar` (working intervals in
 * UTC) and `sla_targets`, from which `ticket_metrics` computes business-time durations and breach flags.
 */

export const WEEKDAYS = [
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
  'sunday',
] as const;
export type Weekday = (typeof WEEKDAYS)[number];

const CLOCK = /^(?:[01]\d|2[0-3]):[0-5]\d$|^24:00$/;
const minutesOf = (clock: string) => Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3, 5));

/** One working interval of a day, local wall-clock time: `09:00-17:30` (end after start; `24:00` ends the day). */
export const DayInterval = z.string().transform((text, ctx) => {
  const [from, to, ...rest] = text.split('-').map((s) => s.trim());
  if (rest.length > 0 || from === undefined || to === undefined || !CLOCK.test(from) || !CLOCK.test(to)) {
    ctx.addIssue({ code: 'custom', message: `"${text}" is not HH:MM-HH:MM (e.g. 09:00-17:30)` });
    return z.NEVER;
  }
  const start = minutesOf(from);
  const end = minutesOf(to);
  if (end <= start) {
    ctx.addIssue({ code: 'custom', message: `"${text}" ends before it starts` });
    return z.NEVER;
  }
  return { startMinute: start, endMinute: end };
});
export type DayInterval = z.infer<typeof DayInterval>;

/** A day's intervals, sorted and not overlapping. */
const DayHours = z.array(DayInterval).superRefine((intervals, ctx) => {
  const sorted = [...intervals].sort((a, b) => a.startMinute - b.startMinute);
  for (let i = 1; i < sorted.length; i++)
    if (sorted[i]!.startMinute < sorted[i - 1]!.endMinute)
      ctx.addIssue({ code: 'custom', message: 'intervals of one day overlap' });
});

/** An ISO 8601 duration (`PT4H`, `P2D`, `P1DT12H`), read as a whole number of seconds (days are 24 hours). */
export const TargetDuration = z.string().transform((text, ctx) => {
  const d = Duration.fromISO(text);
  const seconds = d.isValid ? d.as('seconds') : Number.NaN;
  // Years and months have no fixed length: a target in them would mean different things in different months.
  const calendarUnits = /[YM]/.test(text.split('T')[0] ?? '');
  if (!Number.isFinite(seconds) || seconds <= 0 || calendarUnits) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text}" is not a positive ISO 8601 duration in weeks, days, hours, minutes or seconds (e.g. PT4H, P2D)`,
    });
    return z.NEVER;
  }
  return { iso: text, seconds: Math.round(seconds) };
});

export const PRIORITIES = Priority.options;

const Target = z
  .object({
    first_reply: TargetDuration.optional().describe('Target for the first public reply, in business time'),
    resolution: TargetDuration.optional().describe('Target for the full resolution, in business time'),
  })
  .strict();

const Holiday = z.iso.date({ message: 'expected a date YYYY-MM-DD' });

export const BusinessHoursFile = z
  .object({
    timezone: z
      .string()
      .refine((tz) => IANAZone.isValidZone(tz), {
        message: 'expected an IANA time zone (e.g. Europe/Berlin)',
      })
      .describe('IANA time zone the weekly hours and holidays are in'),
    hours: z
      .object(
        Object.fromEntries(WEEKDAYS.map((d) => [d, DayHours.optional()])) as Record<
          Weekday,
          z.ZodOptional<typeof DayHours>
        >,
      )
      .strict()
      .describe('Per weekday, its working intervals (`HH:MM-HH:MM`); a day not named is not worked'),
    holidays: z.array(Holiday).default([]).describe('Dates (local) not worked'),
    targets: z
      .partialRecord(Priority, Target)
      .default({})
      .describe('Per priority, targets as ISO 8601 durations of business time'),
  })
  .strict();
export type BusinessHoursFile = z.infer<typeof BusinessHoursFile>;
