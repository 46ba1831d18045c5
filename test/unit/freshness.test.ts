import { describe, expect, it } from 'vitest';
import { freshnessLines } from '../../cli/display/freshness.js';
import { FRESH_STREAMS, FRESHNESS_STAMPS, freshTableOf, newestStampMs } from '../../schemas/freshness.js';
import { streamOf } from '../../schemas/streams.js';
import { tableSpecOf } from '../../schemas/warehouse.js';
import { assessFreshness } from '../../worker/freshness.js';

const T = Date.parse('2026-06-01T12:00:00Z');
const HOUR = 3_600_000;

describe('freshness per stream (schemas/freshness.ts, worker/freshness.ts)', () => {
  it("each stream's stamp is a timestamp column of its table, so the warehouse side can be read", () => {
    expect(FRESH_STREAMS).toEqual(['tickets', 'ticket_messages', 'csat_surveys', 'agent_sessions']);
    for (const stream of FRESH_STREAMS) {
      const column = tableSpecOf(freshTableOf(stream)).columns.find(
        (c) => c.name === FRESHNESS_STAMPS[stream],
      );
      expect(column?.type, stream).toBe('timestamp');
    }
  });

  it('the newest stamp of a page counts every item with a readable stamp, set-aside raw items included', () => {
    const items = [
      { sent_at: '2026-05-01T00:00:00Z' },
      { sent_at: '2026-05-03T00:00:00.123456Z' },
      { sent_at: 'not a time' },
      { sent_at: 7 },
      null,
      'raw text',
    ];
    expect(newestStampMs('csat_surveys', items)).toBe(Date.parse('2026-05-03T00:00:00.123Z'));
    expect(newestStampMs('csat_surveys', [{ sent_at: null }])).toBeNull();
    expect(newestStampMs('views', [{ updated_at: '2026-05-01T00:00:00Z' }])).toBeNull();
  });

  it("a page path's name is its stream: an export pass belongs to its export", () => {
    expect(streamOf('csat_surveys.submitted')).toBe('csat_surveys');
    expect(streamOf('ticket_messages')).toBe('ticket_messages');
    expect(() => streamOf('nps.sent')).toThrow();
  });

  it('is over the target by lag, by a read older than the target, or by never having been read', () => {
    const base = { stream: 'csat_surveys' as const, nowMs: T, sloMs: 2 * HOUR };
    const fresh = assessFreshness({
      ...base,
      sourceNewestMs: T - HOUR,
      warehouseNewestMs: T - HOUR,
      lastReadMs: T - HOUR,
    });
    expect(fresh).toMatchObject({
      stamp: 'sent_at',
      lag_seconds: 0,
      read_age_seconds: 3600,
      over_slo: false,
      reasons: [],
    });
    const lagging = assessFreshness({
      ...base,
      sourceNewestMs: T - HOUR,
      warehouseNewestMs: T - 4 * HOUR,
      lastReadMs: T - 60_000,
    });
    expect(lagging).toMatchObject({ lag_seconds: 3 * 3600, over_slo: true, reasons: ['lag'] });
    expect(lagging.source_newest).toBe('2026-06-01T11:00:00.000Z');
    const unread = assessFreshness({
      ...base,
      sourceNewestMs: T,
      warehouseNewestMs: T,
      lastReadMs: T - 3 * HOUR,
    });
    expect(unread.reasons).toEqual(['not read within the target']);
    // Nothing synced yet: no lag to tell, and over because never read.
    const never = assessFreshness({
      ...base,
      sourceNewestMs: null,
      warehouseNewestMs: null,
      lastReadMs: null,
    });
    expect(never).toMatchObject({
      lag_seconds: null,
      read_age_seconds: null,
      over_slo: true,
      reasons: ['never read'],
    });
    // A warehouse ahead of what was seen (another process wrote later items) is no lag.
    const ahead = assessFreshness({
      ...base,
      sourceNewestMs: T - 2 * HOUR,
      warehouseNewestMs: T,
      lastReadMs: T,
    });
    expect(ahead.lag_seconds).toBe(0);
  });

  it('status prints each stream with its lag and last read, and flags those over the target', () => {
    const within = assessFreshness({
      stream: 'tickets',
      sourceNewestMs: T,
      warehouseNewestMs: T,
      lastReadMs: T - 5 * 60_000,
      nowMs: T,
      sloMs: 2 * HOUR,
    });
    const over = assessFreshness({
      stream: 'agent_sessions',
      sourceNewestMs: T,
      warehouseNewestMs: T - 3 * HOUR,
      lastReadMs: T - 5 * 60_000,
      nowMs: T,
      sloMs: 2 * HOUR,
    });
    const lines = freshnessLines([within, over], 2 * HOUR);
    expect(lines[0]).toBe(
      'Freshness against the target of 2 h (SYNC_FRESHNESS_SLO): 1 over it (agent_sessions)',
    );
    expect(lines[2]).toMatch(
      /^ {2}tickets +updated_at +2026-06-01T12:00:00\.000Z +2026-06-01T12:00:00\.000Z +0 s +5 min ago$/,
    );
    expect(lines[3]).toMatch(/^ {2}agent_sessions +session_start .* 3 h +5 min ago +OVER \(lag\)$/);
    expect(freshnessLines([within], 2 * HOUR)[0]).toMatch(/every stream within it$/);
  });
});
