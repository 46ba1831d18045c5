import { describe, expect, it } from 'vitest';
import { type FleetSlotSource, FleetSlots } from '../../connectors/support-api/fleet-slots.js';
import { RateGovernor } from '../../connectors/support-api/rate-governor.js';
import type { FleetClassLedger, FleetSlotRequest, FleetWindowReport } from '../../schemas/fleet-budget.js';
import { applyReport, grantSlots, newLedger, PROBE_TIMEOUT_MS } from '../../workflows/fleet-budget-ledger.js';
import { FakeClock, FixedWindowServer } from './support/fake-clock.js';

const WINDOW = 60_000;

/** An API that counts fixed windows aligned to multiples of the window (the companion's reading of spec 8). */
class AlignedServer {
  #start = -1;
  #count = 0;
  readonly log: Array<{ at: number; status: number }> = [];
  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}
  hit(now: number): { status: number; headers: Record<string, string> } {
    const start = Math.floor(now / this.windowMs) * this.windowMs;
    if (start !== this.#start) {
      this.#start = start;
      this.#count = 0;
    }
    const status = this.#count >= this.limit ? 429 : 200;
    if (status === 200) this.#count += 1;
    this.log.push({ at: now, status });
    const resetAt = start + this.windowMs;
    return {
      status,
      headers: {
        'x-ratelimit-limit': String(this.limit),
        'x-ratelimit-remaining': String(Math.max(0, this.limit - this.#count)),
        'x-ratelimit-reset': String(Math.ceil(resetAt / 1000)),
        ...(status === 429 ? { 'retry-after': String(Math.ceil((resetAt - now) / 1000)) } : {}),
      },
    };
  }
}

/** The budget workflow's ledger in memory, answering after `latencyMs` (a workflow task's round trip). */
class LedgerInMemory implements FleetSlotSource {
  readonly ledger: FleetClassLedger;
  questions = 0;
  constructor(
    private readonly clock: FakeClock,
    limit: number,
    private readonly latencyMs = 30,
  ) {
    this.ledger = newLedger({ limit, share: 1 });
  }
  async acquire(request: FleetSlotRequest) {
    this.questions += 1;
    await this.clock.sleep(this.latencyMs);
    return grantSlots(this.ledger, this.clock.now(), request.want, WINDOW);
  }
  report(report: FleetWindowReport): void {
    applyReport(this.ledger, report);
  }
}

/** `processes` governors sharing one ledger, each sending `perProcess` requests as fast as slots allow. */
async function fleetRun(options: {
  server: {
    hit(now: number): { status: number; headers: Record<string, string> };
    log: { at: number; status: number }[];
  };
  limit: number;
  processes: number;
  perProcess: number;
  clock: FakeClock;
}) {
  const { clock, server } = options;
  const source = new LedgerInMemory(clock, options.limit);
  const sends: number[] = [];
  const work = Array.from({ length: options.processes }, async () => {
    const governor = new RateGovernor({ clock, pacedElsewhere: ['analytics'], reserve: 1 });
    governor.useFleet(
      new FleetSlots({
        source,
        classes: ['analytics'],
        clock,
        windowMs: WINDOW,
        limits: { analytics: options.limit },
      }),
      10 * WINDOW,
    );
    await Promise.all(
      Array.from({ length: options.perProcess }, async () => {
        await governor.acquire('analytics');
        await clock.sleep(40); // the request's round trip
        sends.push(clock.now());
        governor.observe('analytics', server.hit(clock.now()));
      }),
    );
  });
  const started = clock.now();
  await clock.run(Promise.all(work));
  return { wallMs: clock.now() - started, sends, source };
}

describe('the fleet budget (issue 22): each API window spent as it opens, for every process together', () => {
  it('three processes spend 30 analytics requests at 10 a window in three windows, 0 429s (aligned windows)', async () => {
    // Start 20 s into a window: the first window is partial, as it is for any run.
    const clock = new FakeClock(Date.parse('2025-01-01T00:00:20Z'));
    const server = new AlignedServer(10, WINDOW);
    const { wallMs, source } = await fleetRun({ server, limit: 10, processes: 3, perProcess: 10, clock });
    expect(server.log.filter((r) => r.status === 429)).toEqual([]);
    // 10 in the partial first window (40 s left), 10 at 00:01:00, 10 at 00:02:00: done a little after
    // 00:02:00, 100 s after the start. Spread evenly at 10 a minute (the task queues' pacing before), the
    // same requests took 180 s; the plain loop, 100 s.
    expect(wallMs).toBeLessThan(100_000 + 2_000);
    const firstWindow = server.log.filter((r) => r.at < Date.parse('2025-01-01T00:01:00Z'));
    expect(firstWindow).toHaveLength(10);
    // One question per process and window, not one per request.
    expect(source.questions).toBeLessThan(30);
  });

  it('windows that start at the first request after a pause are only spent once the server named their end', async () => {
    const clock = new FakeClock();
    const server = new FixedWindowServer(10, WINDOW);
    const { sends } = await fleetRun({ server, limit: 10, processes: 3, perProcess: 15, clock });
    expect(server.log.filter((r) => r.status === 429)).toEqual([]);
    expect(sends).toHaveLength(45);
    // Every window of the server holds at most 10: checked by the server itself (a 429 otherwise).
    expect(server.log).toHaveLength(45);
  });

  it('a server that does not count (limits off) is not budgeted: its named limit is not one it enforces', async () => {
    const clock = new FakeClock(Date.parse('2025-01-01T00:00:20Z'));
    // Answers every request, naming a limit of 10 a minute it does not count (remaining stays 10).
    const log: { at: number; status: number }[] = [];
    const server = {
      log,
      hit(now: number) {
        log.push({ at: now, status: 200 });
        return {
          status: 200,
          headers: {
            'x-ratelimit-limit': '10',
            'x-ratelimit-remaining': '10',
            'x-ratelimit-reset': '1735689660',
          },
        };
      },
    };
    const { wallMs } = await fleetRun({ server, limit: 100, processes: 3, perProcess: 40, clock });
    expect(log).toHaveLength(120);
    // 120 requests at 10 a minute would take 11 minutes; unbudgeted, a few round trips.
    expect(wallMs).toBeLessThan(5_000);
  });

  it('a 429 reported by one process pauses the class for all until its Retry-After', () => {
    const ledger = newLedger({ limit: 10, share: 1 });
    const now = Date.parse('2025-01-01T00:00:10Z');
    applyReport(ledger, { routeClass: 'analytics', windowEnd: now + 50_000, limit: 10, remaining: 9 });
    expect(grantSlots(ledger, now, 3, WINDOW).granted).toBe(3);
    applyReport(ledger, {
      routeClass: 'analytics',
      windowEnd: now + 50_000,
      limit: 10,
      remaining: 0,
      rateLimitedUntil: now + 50_000,
    });
    const answer = grantSlots(ledger, now + 1000, 5, WINDOW);
    expect(answer.granted).toBe(0);
    expect(answer.retryAt).toBe(now + 50_000);
  });

  it('grants nothing a window cannot take: its count from the server, its end less the guard, one probe after it', () => {
    const ledger = newLedger({ limit: 10, share: 0.5 });
    const end = Date.parse('2025-01-01T00:01:00Z');
    applyReport(ledger, { routeClass: 'analytics', windowEnd: end, limit: 10, remaining: 7 });
    // share 0.5 of 10 = 5, of which the server already counted 3.
    expect(grantSlots(ledger, end - 30_000, 10, WINDOW)).toMatchObject({ granted: 2, sendBy: end - 1250 });
    expect(grantSlots(ledger, end - 29_000, 1, WINDOW)).toMatchObject({ granted: 0, retryAt: end + 250 });
    // Within the guard before the end: wait for the next window.
    const fresh = newLedger({ limit: 10, share: 1 });
    applyReport(fresh, { routeClass: 'analytics', windowEnd: end, limit: 10, remaining: 9 });
    expect(grantSlots(fresh, end - 1000, 1, WINDOW)).toMatchObject({ granted: 0, retryAt: end + 250 });
    // After the end: one probe, the others poll until its answer is reported.
    expect(grantSlots(fresh, end + 300, 4, WINDOW)).toMatchObject({ granted: 1, probe: true });
    expect(grantSlots(fresh, end + 310, 4, WINDOW).granted).toBe(0);
    applyReport(fresh, { routeClass: 'analytics', windowEnd: end + WINDOW, limit: 10, remaining: 9 });
    expect(grantSlots(fresh, end + 400, 20, WINDOW).granted).toBe(9);
    // A probe whose answer never came is replaced.
    const lost = newLedger({ limit: 10, share: 1 });
    expect(grantSlots(lost, end, 1, WINDOW).probe).toBe(true);
    expect(grantSlots(lost, end + PROBE_TIMEOUT_MS - 1, 1, WINDOW).granted).toBe(0);
    expect(grantSlots(lost, end + PROBE_TIMEOUT_MS, 1, WINDOW).probe).toBe(true);
  });
});
