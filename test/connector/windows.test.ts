import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planWindows, windowLengthMs } from '../../connectors/support-api/windows.js';
import { MAX_EXPORT_WINDOW_MS } from '../../schemas/api/exports.js';

const DAY = 24 * 3_600_000;
const ISO_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const instant = fc.integer({
  min: Date.parse('2015-01-01T00:00:00Z'),
  max: Date.parse('2035-01-01T00:00:00Z'),
});

describe('window planner', () => {
  it('covers [from - lookBack, to) exactly: shared boundaries, no gaps, none over the limit (property)', () => {
    fc.assert(
      fc.property(
        instant,
        fc.integer({ min: 0, max: 400 * DAY }),
        fc.option(fc.integer({ min: DAY / 4, max: MAX_EXPORT_WINDOW_MS }), { nil: undefined }),
        fc.integer({ min: 0, max: 200 * DAY }),
        (from, span, maxWindowMs, lookBackMs) => {
          const to = from + span;
          const ws = planWindows({
            from: new Date(from),
            to: new Date(to),
            lookBackMs,
            ...(maxWindowMs ? { maxWindowMs } : {}),
          });
          const limit = maxWindowMs ?? MAX_EXPORT_WINDOW_MS;
          if (span === 0) {
            // only the look-back remains
            if (lookBackMs === 0) expect(ws).toEqual([]);
          }
          if (ws.length === 0) {
            expect(from - lookBackMs).toBeGreaterThanOrEqual(to);
            return;
          }
          expect(Date.parse(ws[0]!.windowStart)).toBe(from - lookBackMs);
          expect(Date.parse(ws.at(-1)!.windowEnd)).toBe(to);
          for (let i = 0; i < ws.length; i++) {
            const w = ws[i]!;
            expect(w.windowStart).toMatch(ISO_Z);
            expect(w.windowEnd).toMatch(ISO_Z);
            const len = windowLengthMs(w);
            expect(len).toBeGreaterThan(0);
            expect(len).toBeLessThanOrEqual(limit);
            if (i > 0) expect(w.windowStart).toBe(ws[i - 1]!.windowEnd);
            if (i < ws.length - 1) expect(len).toBe(limit); // only the last is shorter: fewest windows
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('accepts offsets in string inputs and emits Z instants', () => {
    const ws = planWindows({ from: '2025-01-01T02:00:00+02:00', to: '2025-01-02T00:00:00Z' });
    expect(ws).toEqual([{ windowStart: '2025-01-01T00:00:00.000Z', windowEnd: '2025-01-02T00:00:00.000Z' }]);
  });

  it('rejects instants without an offset, windows over 90x24h and negative look-back', () => {
    expect(() => planWindows({ from: '2025-01-01T00:00:00', to: '2025-02-01T00:00:00Z' })).toThrow(/offset/);
    expect(() => planWindows({ from: 0, to: 1, maxWindowMs: MAX_EXPORT_WINDOW_MS + 1 })).toThrow(RangeError);
    expect(() => planWindows({ from: 0, to: 1, lookBackMs: -1 })).toThrow(RangeError);
    expect(() => planWindows({ from: 0, to: 365 * DAY, maxWindowMs: 1 })).toThrow(/maxWindows/);
  });

  it('splits 200 days into 90 + 90 + 20 days and the look-back extends the first window', () => {
    const from = Date.parse('2024-01-01T00:00:00Z');
    const ws = planWindows({ from, to: from + 200 * DAY, lookBackMs: 3 * DAY });
    expect(ws.map(windowLengthMs)).toEqual([90 * DAY, 90 * DAY, 23 * DAY]);
    expect(ws[0]!.windowStart).toBe('2023-12-29T00:00:00.000Z');
  });
});
