import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildCalendar, businessSeconds } from '../../activities/business-hours/calendar.js';
import { BusinessHoursFile } from '../../schemas/business-hours.js';
import { BusinessHoursSource } from '../../schemas/config.js';
import { ConfigError, loadConfig, readBusinessHours } from '../../worker/config.js';

/**
 * The calendar builder (activities/business-hours/calendar.ts) and the file schema: a hand-worked week in
 * Berlin across a weekend, the spring DST change and a holiday; properties of business seconds.
 */

const berlin = BusinessHoursFile.parse({
  timezone: 'Europe/Berlin',
  hours: {
    monday: ['09:00-17:00'],
    tuesday: ['09:00-17:00'],
    wednesday: ['09:00-17:00'],
    thursday: ['09:00-17:00'],
    friday: ['09:00-17:00'],
    // The night the clocks go forward (2025-03-30, 02:00 CET → 03:00 CEST): 4 local hours, 3 real ones.
    sunday: ['01:00-05:00'],
  },
  holidays: ['2025-04-01'],
  targets: { urgent: { first_reply: 'PT1H', resolution: 'P1D' } },
});

const ms = (iso: string) => Date.parse(iso);
const utc = (i: { startMs: number; endMs: number }) => [
  new Date(i.startMs).toISOString(),
  new Date(i.endMs).toISOString(),
];

describe('buildCalendar', () => {
  it('converts each local day in its own offset: CET before the change, CEST after, none on a holiday', () => {
    const cal = buildCalendar(berlin, ms('2025-03-28T00:00:00Z'), ms('2025-04-03T00:00:00Z'));
    expect(cal.map(utc)).toEqual([
      ['2025-03-28T08:00:00.000Z', '2025-03-28T16:00:00.000Z'], // Friday, CET (+01:00)
      ['2025-03-30T00:00:00.000Z', '2025-03-30T03:00:00.000Z'], // Sunday across the change
      ['2025-03-31T07:00:00.000Z', '2025-03-31T15:00:00.000Z'], // Monday, CEST (+02:00)
      ['2025-04-02T07:00:00.000Z', '2025-04-02T15:00:00.000Z'], // Wednesday (Tuesday a holiday)
    ]);
    expect(cal.map((i) => i.localDate)).toEqual(['2025-03-28', '2025-03-30', '2025-03-31', '2025-04-02']);
  });

  it('counts business seconds as the overlap with the intervals', () => {
    const cal = buildCalendar(berlin, ms('2025-03-20T00:00:00Z'), ms('2025-04-10T00:00:00Z'));
    // Friday 15:00 UTC → Wednesday 08:00 UTC: 1 h Friday, 3 h Sunday, 8 h Monday, 1 h Wednesday.
    expect(businessSeconds(cal, ms('2025-03-28T15:00:00Z'), ms('2025-04-02T08:00:00Z'))).toBe(13 * 3600);
    // Saturday alone: nothing.
    expect(businessSeconds(cal, ms('2025-03-29T00:00:00Z'), ms('2025-03-30T00:00:00Z'))).toBe(0);
  });

  it('ends a day at 24:00 and keeps a day of several intervals apart', () => {
    const file = BusinessHoursFile.parse({
      timezone: 'America/New_York',
      hours: { saturday: ['20:00-24:00', '08:00-12:00'] },
    });
    const cal = buildCalendar(file, ms('2025-11-01T00:00:00Z'), ms('2025-11-03T00:00:00Z'));
    expect(cal.map(utc)).toEqual([
      ['2025-11-01T12:00:00.000Z', '2025-11-01T16:00:00.000Z'],
      ['2025-11-02T00:00:00.000Z', '2025-11-02T04:00:00.000Z'],
    ]);
  });

  const arbitraryHours = fc
    .record({
      zone: fc.constantFrom(
        'Europe/Berlin',
        'America/New_York',
        'Australia/Lord_Howe',
        'Asia/Kolkata',
        'UTC',
      ),
      days: fc.array(fc.tuple(fc.integer({ min: 0, max: 47 }), fc.integer({ min: 1, max: 48 })), {
        maxLength: 7,
      }),
    })
    .map(({ zone, days }) => {
      const clock = (half: number) =>
        `${String(Math.floor(half / 2)).padStart(2, '0')}:${half % 2 ? '30' : '00'}`;
      const names = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
      const hours: Record<string, string[]> = {};
      days.forEach(([from, len], i) => {
        const to = Math.min(48, from + len);
        if (to > from) hours[names[i]!] = [`${clock(from)}-${clock(to)}`];
      });
      return BusinessHoursFile.parse({ timezone: zone, hours, holidays: ['2025-03-31', '2025-11-03'] });
    });
  const span = fc
    .tuple(
      fc.integer({ min: ms('2025-01-01T00:00:00Z'), max: ms('2025-12-31T00:00:00Z') }),
      fc.integer({ min: 0, max: 20 * 86_400_000 }),
      fc.double({ min: 0, max: 1, noNaN: true }),
    )
    .map(([start, length, cut]) => ({ start, end: start + length, mid: start + Math.floor(length * cut) }));

  it('property: business seconds never exceed calendar seconds and add up over any split', () => {
    fc.assert(
      fc.property(arbitraryHours, span, (hours, { start, mid, end }) => {
        const cal = buildCalendar(hours, start - 86_400_000, end + 86_400_000);
        const whole = businessSeconds(cal, start, end);
        expect(whole).toBeGreaterThanOrEqual(0);
        expect(whole).toBeLessThanOrEqual((end - start) / 1000);
        expect(businessSeconds(cal, start, mid) + businessSeconds(cal, mid, end)).toBeCloseTo(whole, 6);
      }),
      { numRuns: 300 },
    );
  });

  it('property: intervals are sorted and disjoint', () => {
    fc.assert(
      fc.property(arbitraryHours, span, (hours, { start, end }) => {
        const cal = buildCalendar(hours, start, end);
        for (let i = 0; i < cal.length; i++) {
          expect(cal[i]!.endMs).toBeGreaterThan(cal[i]!.startMs);
          if (i > 0) expect(cal[i]!.startMs).toBeGreaterThanOrEqual(cal[i - 1]!.endMs);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('the business-hours file', () => {
  const EXAMPLE = fileURLToPath(new URL('../../examples/business-hours.yaml', import.meta.url));

  it('examples/business-hours.yaml validates', () => {
    const source = BusinessHoursSource.parse(readBusinessHours(EXAMPLE));
    expect(source.hours.timezone).toBe('Europe/Berlin');
    expect(source.hours.targets.urgent).toEqual({
      first_reply: { iso: 'PT1H', seconds: 3600 },
      resolution: { iso: 'PT8H', seconds: 28_800 },
    });
  });

  it.each([
    [{ timezone: 'Mars/Olympus', hours: {} }, 'timezone: expected an IANA time zone'],
    [{ timezone: 'UTC', hours: { monday: ['9-17'] } }, 'hours.monday.0: "9-17" is not HH:MM-HH:MM'],
    [{ timezone: 'UTC', hours: { funday: ['09:00-17:00'] } }, 'hours: Unrecognized key: "funday"'],
    [{ timezone: 'UTC', hours: { monday: ['17:00-09:00'] } }, 'hours.monday.0: "17:00-09:00" ends before'],
    [{ timezone: 'UTC', hours: {}, holidays: ['2025-13-01'] }, 'holidays.0: expected a date YYYY-MM-DD'],
    [
      { timezone: 'UTC', hours: {}, targets: { urgent: { first_reply: 'P1M' } } },
      'targets.urgent.first_reply: "P1M" is not a positive ISO 8601 duration',
    ],
  ])('a bad file names the file and the field: %j', (content, message) => {
    const result = BusinessHoursSource.safeParse({ path: '/etc/hours.yaml', content });
    expect(result.success).toBe(false);
    expect(result.error!.issues[0]!.message).toContain(`/etc/hours.yaml: ${message}`);
  });

  it('a bad or missing file stops the configuration (exit 2) naming the setting, the file and the field', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'bh-')), 'hours.yaml');
    writeFileSync(
      file,
      'timezone: UTC\nhours:\n  monday: [09:00-17:00]\ntargets:\n  urgent: { first_reply: soon }\n',
    );
    const env = {
      SUPPORT_API_URL: 'http://127.0.0.1:1',
      SUPPORT_API_KEY: 'sk_test_abcdefghijklmnop',
      DESTINATION_URL: 'postgres://u@127.0.0.1:1/db',
    };
    const problems = (extra: Record<string, string>) => {
      try {
        loadConfig({ ...env, ...extra });
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      return 'no error';
    };
    expect(problems({ SYNC_BUSINESS_HOURS: file })).toContain(
      `SYNC_BUSINESS_HOURS: ${file}: targets.urgent.first_reply: "soon" is not a positive ISO 8601 duration`,
    );
    expect(problems({ SYNC_BUSINESS_HOURS: `${file}.gone` })).toContain(
      `SYNC_BUSINESS_HOURS: ${file}.gone: cannot read the file (ENOENT)`,
    );
    writeFileSync(file, 'timezone: UTC\nhours:\n  monday: [09:00-17:00]\n');
    expect(loadConfig({ ...env, SYNC_BUSINESS_HOURS: file }).SYNC_BUSINESS_HOURS?.hours.hours.monday).toEqual(
      [{ startMinute: 540, endMinute: 1020 }],
    );
  });
});
