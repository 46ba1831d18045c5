import { describe, expect, it } from 'vitest';
import { RateLimitedError } from '../../connectors/support-api/errors.js';
import {
  GovernorRegistry,
  keyFingerprint,
  parseResetHeader,
  RateGovernor,
} from '../../connectors/support-api/rate-governor.js';
import { routeClassFor } from '../../connectors/support-api/route-classes.js';
import { Secret } from '../../schemas/secret.js';
import { FakeClock, FixedWindowServer } from './support/fake-clock.js';

function headers(limit: number, remaining: number, resetMs: number) {
  return {
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(resetMs / 1000),
  };
}

/** Sequential callers against a fixed-window server; returns achieved rate / limit rate and 429s. */
async function simulate(opts: {
  limit: number;
  windowMs: number;
  requests: number;
  workers: number;
  latencyMs: number;
}) {
  const clock = new FakeClock();
  const gov = new RateGovernor({ clock });
  const server = new FixedWindowServer(opts.limit, opts.windowMs);
  let issued = 0;
  const worker = async () => {
    while (issued < opts.requests) {
      issued += 1;
      await gov.acquire('analytics');
      await clock.sleep(opts.latencyMs / 2);
      const res = server.hit(clock.now());
      await clock.sleep(opts.latencyMs / 2);
      gov.observe('analytics', res);
    }
  };
  const start = clock.now();
  await clock.run(Promise.all(Array.from({ length: opts.workers }, worker)));
  const ok = server.log.filter((l) => l.status === 200);
  const elapsed = ok.at(-1)!.at - ok[0]!.at;
  // rate over the span of accepted requests: (n - 1) intervals
  const ratio = (ok.length - 1) / (elapsed / opts.windowMs) / opts.limit;
  return { ratio, rateLimited: server.log.length - ok.length, stats: gov.classStats('analytics'), start };
}

describe('rate governor (fake clock)', () => {
  it('lets one probe through before anything is known, then waits for its headers', () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock });
    expect(gov.decide('list')).toEqual({ waitMs: 0, reason: 'ok' });
    void gov.acquire('list');
    return Promise.resolve().then(async () => {
      await new Promise((r) => setImmediate(r));
      expect(gov.decide('list').reason).toBe('probe_in_flight');
      gov.observe('list', { status: 200, headers: headers(60, 59, clock.now() + 60_000) });
      expect(gov.decide('list').waitMs).toBeGreaterThan(0);
    });
  });

  it('follows the server headers: paces remaining requests evenly until the reset', async () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock });
    await gov.acquire('analytics');
    // server says: 10 per window, 9 left, window resets in 2 s (not 60 s)
    gov.observe('analytics', { status: 200, headers: headers(10, 9, clock.now() + 2000) });
    const d = gov.decide('analytics');
    expect(d.reason).toBe('paced');
    expect(d.waitMs).toBe(200); // 2000 ms / (9 + 1)
    expect(gov.classStats('analytics')).toMatchObject({ limit: 10, remaining: 9, windowMs: 2000 });
  });

  it('waits for the reset when the window is spent', async () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock, resetMarginMs: 0 });
    await gov.acquire('detail');
    gov.observe('detail', { status: 200, headers: headers(120, 0, clock.now() + 1500) });
    expect(gov.decide('detail')).toEqual({ waitMs: 1500, reason: 'window_exhausted' });
    clock.advance(1500);
    expect(gov.decide('detail').waitMs).toBe(0);
  });

  it("learns the window from a success or a 429 only: a redirect's or an error's headers count one request", async () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock, resetMarginMs: 0 });
    const spent = headers(120, 0, clock.now() + 365 * 24 * 3_600_000);
    for (const status of [302, 401, 404, 500, 503]) {
      await gov.acquire('detail');
      gov.observe('detail', { status, headers: spent });
      expect(gov.decide('detail'), `after a ${status}`).toEqual({ waitMs: 0, reason: 'ok' });
    }
    expect(gov.classStats('detail')).toMatchObject({ responses: 5, limit: undefined, inFlight: 0 });
    // Once the window is known, such an answer is one request of it, no more.
    await gov.acquire('detail');
    gov.observe('detail', { status: 200, headers: headers(120, 2, clock.now() + 1500) });
    gov.observe('detail', { status: 502, headers: spent });
    expect(gov.classStats('detail')).toMatchObject({ remaining: 1, resetAt: clock.now() + 1500 });
  });

  it('with a fleet reserve, never spends the last request of a window another process may be taking', async () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock, reserve: 1 });
    const resetAt = clock.now() + 2000;
    await gov.acquire('detail');
    // The server counted other processes' requests too: one left in this window.
    gov.observe('detail', { status: 200, headers: headers(10, 1, resetAt) });
    expect(gov.decide('detail')).toEqual({ waitMs: 2000 + 20, reason: 'window_exhausted' });
    // Two left: this process may take one of them.
    const other = new RateGovernor({ clock, reserve: 1 });
    await other.acquire('detail');
    other.observe('detail', { status: 200, headers: headers(10, 2, resetAt) });
    expect(other.decide('detail').reason).not.toBe('window_exhausted');
    // A reserve never takes a whole window: at a limit of 2, one request per window still goes.
    const tiny = new RateGovernor({ clock, reserve: 3 });
    await tiny.acquire('analytics');
    tiny.observe('analytics', { status: 200, headers: headers(2, 1, resetAt) });
    expect(tiny.decide('analytics').reason).toBe('window_exhausted');
    clock.advance(2100);
    expect(tiny.decide('analytics')).toEqual({ waitMs: 0, reason: 'ok' });
  });

  it('does not pace a class paced elsewhere (the task queue), only keeps it within its window and reserve', async () => {
    // Issue 22: at 10 a minute the governor's even spread (~6 s) on top of the task queue's own pacing
    // made each analytics page wait out both, and a wait beyond maxRateWaitMs became a Temporal retry.
    const clock = new FakeClock();
    const resetAt = clock.now() + 60_000;
    const paced = new RateGovernor({ clock, reserve: 1 });
    const queued = new RateGovernor({ clock, reserve: 1, pacedElsewhere: ['analytics'] });
    for (const gov of [paced, queued]) {
      await gov.acquire('analytics');
      gov.observe('analytics', { status: 200, headers: headers(10, 9, resetAt) });
    }
    expect(paced.decide('analytics').reason).toBe('paced');
    expect(queued.decide('analytics')).toEqual({ waitMs: 0, reason: 'ok' });
    // Other classes of the same governor are still paced.
    await queued.acquire('list');
    queued.observe('list', { status: 200, headers: headers(60, 58, resetAt) });
    expect(queued.decide('list').reason).toBe('paced');
    // The window's budget and the fleet reserve still hold: one left is the reserve's.
    await queued.acquire('analytics');
    queued.observe('analytics', { status: 200, headers: headers(10, 1, resetAt) });
    expect(queued.decide('analytics')).toEqual({ waitMs: 60_000 + 20, reason: 'window_exhausted' });
  });

  it('with reserveWhenShared, keeps the reserve only once the server counted requests that were not its own', async () => {
    const clock = new FakeClock();
    const resetAt = clock.now() + 60_000;
    const gov = new RateGovernor({
      clock,
      reserve: 1,
      reserveWhenShared: true,
      pacedElsewhere: ['analytics'],
    });
    // Alone on the key: the server's count is this process's own, so the last request of the window goes.
    for (let i = 1; i <= 9; i++) {
      await gov.acquire('analytics');
      gov.observe('analytics', { status: 200, headers: headers(10, 10 - i, resetAt) });
    }
    expect(gov.decide('analytics')).toEqual({ waitMs: 0, reason: 'ok' });
    // Next window: someone else spent two before our first answer came back — the key is shared.
    const nextReset = resetAt + 60_000;
    clock.advance(60_100);
    await gov.acquire('analytics');
    gov.observe('analytics', { status: 200, headers: headers(10, 7, nextReset) });
    for (let i = 0; i < 6; i++) {
      await gov.acquire('analytics');
      gov.observe('analytics', { status: 200, headers: headers(10, 6 - i, nextReset) });
    }
    // One left in the window, and it is the reserve's.
    expect(gov.decide('analytics').reason).toBe('window_exhausted');
  });

  it('pauses a class on 429 until Retry-After; other classes are independent', async () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock });
    await gov.acquire('write');
    gov.observe('write', {
      status: 429,
      headers: { ...headers(30, 0, clock.now() + 500), 'retry-after': '3' },
    });
    expect(gov.decide('write')).toEqual({ waitMs: 3000, reason: 'retry_after' });
    expect(gov.decide('list')).toEqual({ waitMs: 0, reason: 'ok' });
    expect(gov.classStats('write').rateLimited).toBe(1);
  });

  it('throws RateLimitedError with retryAfterMs instead of waiting long (throw mode)', async () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock });
    await gov.acquire('analytics');
    gov.observe('analytics', { status: 429, headers: { 'retry-after': '7' } });
    const err = await gov
      .acquire('analytics', { maxWaitMs: 1000, endpoint: 'GET /csat-surveys' })
      .catch((e) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err.retryAfterMs).toBe(7000);
    expect(err.routeClass).toBe('analytics');
    expect(err.retryable).toBe(true);
  });

  it.each([
    { limit: 10, windowMs: 2000, workers: 1, latencyMs: 4 },
    { limit: 10, windowMs: 60_000, workers: 1, latencyMs: 150 },
    { limit: 120, windowMs: 60_000, workers: 1, latencyMs: 30 },
    { limit: 30, windowMs: 3000, workers: 4, latencyMs: 10 },
    { limit: 5, windowMs: 1000, workers: 8, latencyMs: 2 },
  ])('sustains >= 0.95 of the limit with zero 429s: $limit per $windowMs ms, $workers workers', async (o) => {
    const r = await simulate({ ...o, requests: o.limit * 12 });
    expect(r.rateLimited).toBe(0);
    expect(r.ratio).toBeGreaterThanOrEqual(0.95);
    expect(r.ratio).toBeLessThanOrEqual(1.0001);
    expect(r.stats.requests).toBe(o.limit * 12);
    expect(r.stats.waits).toBeGreaterThan(0);
  });

  it('does not pace a class the server does not count (remaining stays at the limit)', async () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock });
    await gov.acquire('list');
    gov.observe('list', { status: 200, headers: headers(60, 60, clock.now() + 60_000) });
    expect(gov.decide('list')).toEqual({ waitMs: 0, reason: 'ok' });
    await gov.acquire('list');
    gov.observe('list', { status: 200, headers: headers(60, 58, clock.now() + 60_000) });
    expect(gov.decide('list').reason).toBe('paced');
  });

  it('ignores stale headers of an older window arriving out of order', async () => {
    const clock = new FakeClock();
    const gov = new RateGovernor({ clock });
    await gov.acquire('list');
    gov.observe('list', { status: 200, headers: headers(60, 10, clock.now() + 1000) });
    clock.advance(1100);
    await gov.acquire('list');
    gov.observe('list', { status: 200, headers: headers(60, 59, clock.now() + 1000) });
    gov.observe('list', { status: 200, headers: headers(60, 3, clock.now() - 100) }); // old window
    expect(gov.classStats('list').remaining).toBe(59);
  });

  it('shares one budget per key fingerprint; the fingerprint does not reveal the key', () => {
    const reg = new GovernorRegistry();
    const a = new Secret('key-aaaaaaaaaaaaaaaa');
    expect(reg.for(a)).toBe(reg.for(new Secret('key-aaaaaaaaaaaaaaaa')));
    expect(reg.for(a)).not.toBe(reg.for(new Secret('key-bbbbbbbbbbbbbbbb')));
    expect(keyFingerprint(a)).toMatch(/^[0-9a-f]{16}$/);
    expect(keyFingerprint(a)).not.toContain('aaaa');
  });

  it('parses reset as unix seconds, epoch ms or delta seconds', () => {
    const now = 1_700_000_000_000;
    expect(parseResetHeader(1_700_000_002, now)).toBe(1_700_000_002_000);
    expect(parseResetHeader(1_700_000_002.5, now)).toBe(1_700_000_002_500);
    expect(parseResetHeader(1_700_000_002_000, now)).toBe(1_700_000_002_000);
    expect(parseResetHeader(30, now)).toBe(now + 30_000);
  });

  it('maps endpoints to route classes (spec 8 + documented choices)', () => {
    expect(routeClassFor('GET', '/tickets')).toBe('list');
    expect(routeClassFor('GET', '/views')).toBe('list');
    expect(routeClassFor('GET', '/reports/metrics')).toBe('list');
    expect(routeClassFor('GET', '/tickets/12')).toBe('detail');
    expect(routeClassFor('GET', '/tickets/12/messages')).toBe('detail');
    expect(routeClassFor('GET', '/health')).toBe('detail');
    expect(routeClassFor('POST', '/tickets')).toBe('write');
    expect(routeClassFor('POST', '/tickets/12/messages')).toBe('write');
    expect(routeClassFor('POST', '/tickets/12')).toBe('ticket_update');
    expect(routeClassFor('POST', '/reports/query')).toBe('analytics');
    expect(routeClassFor('GET', '/csat-surveys')).toBe('analytics');
    expect(routeClassFor('GET', '/agent-sessions')).toBe('analytics');
    expect(routeClassFor('GET', '/tags')).toBe('directory');
    expect(routeClassFor('POST', '/tags')).toBe('directory');
    expect(routeClassFor('POST', '/attachments/upload-url')).toBe('attachments');
  });
});
