import { afterEach, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import { LIVE_CHANGE_WEIGHTS, type LiveChangeKind } from '../../companion/world/live.js';
import { api, start } from './helpers.js';

const DAY = 24 * 60 * 60 * 1000;
const handles: CompanionHandle[] = [];
async function companion(options: Parameters<typeof start>[0] = {}) {
  const h = await start(options);
  handles.push(h);
  return h;
}
afterEach(async () => {
  for (const h of handles.splice(0)) await h.stop();
});

/** Everything the API lists of a workspace that a sync reads: tickets, and the surveys and sessions of a year. */
async function served(h: CompanionHandle) {
  const all = async (path: string, query: Record<string, string | number>) => {
    const out: unknown[] = [];
    let cursor: string | undefined;
    for (;;) {
      const r = await api(h, 'GET', path, { query: { ...query, limit: 100, ...(cursor ? { cursor } : {}) } });
      expect(r.status).toBe(200);
      out.push(...r.body.data);
      if (!r.body.pagination?.has_more) return out;
      cursor = r.body.pagination.next_cursor;
    }
  };
  const end = Date.now() + 60_000;
  const windows = [0, 1, 2, 3, 4].map((i) => ({
    from: new Date(end - (i + 1) * 90 * DAY).toISOString(),
    before: new Date(end - i * 90 * DAY).toISOString(),
  }));
  const surveys = [];
  const sessions = [];
  for (const w of windows) {
    surveys.push(...(await all('/csat-surveys', { sent_from: w.from, sent_before: w.before })));
    sessions.push(...(await all('/agent-sessions', { from: w.from, before: w.before })));
  }
  return { tickets: await all('/tickets', {}), surveys, sessions };
}

describe('live mode: the workspace evolves as a real one does', () => {
  it('is deterministic for a seed: the same ticks give the same workspace over HTTP', async () => {
    const t0 = Date.parse('2026-06-01T12:00:00Z');
    let offset = 0;
    const clock = () => new Date(t0 + offset);
    const a = await companion({ seed: 5, tickets: 80, now: clock });
    const b = await companion({ seed: 5, tickets: 80, now: clock });
    for (let i = 0; i < 20; i++) {
      offset += 60_000;
      expect(b.live.tick(4)).toEqual(a.live.tick(4));
    }
    const [sa, sb] = [await served(a), await served(b)];
    expect(sb).toEqual(sa);
  });

  it('makes every kind of change, on old tickets as well as new ones', async () => {
    const h = await companion({ seed: 9, tickets: 120 });
    const counts = Object.fromEntries(Object.keys(LIVE_CHANGE_WEIGHTS).map((k) => [k, 0])) as Record<
      LiveChangeKind,
      number
    >;
    const touched: number[] = [];
    for (let i = 0; i < 200; i++) {
      const changed = h.live.tick(3);
      for (const [k, n] of Object.entries(changed.counts)) counts[k as LiveChangeKind] += n;
      touched.push(...changed.tickets);
    }
    for (const kind of Object.keys(LIVE_CHANGE_WEIGHTS))
      expect({ kind, n: counts[kind as LiveChangeKind] > 0 }).toEqual({ kind, n: true });
    const world = h.world;
    const ages = touched
      .map((n) => world.ticketByNumber(n))
      .filter((t) => t !== undefined)
      .map((t) => Date.now() - t.createdAt);
    expect(ages.filter((age) => age > 60 * DAY).length).toBeGreaterThan(10);
  });

  it('credits surveys it sends by the rules of spec 2.7, recomputed from the ticket at sending time', async () => {
    const h = await companion({ seed: 13, tickets: 150 });
    const w = h.world;
    let checked = 0;
    for (let i = 0; i < 400; i++) {
      // One change at a time, so the ticket's state is the one the survey was created from.
      const changed = h.live.tick(1);
      for (const id of changed.surveys) {
        const s = w.survey(id)!;
        if (s.submittedAt !== null) continue; // an answer, not a new survey
        const t = w.tickets[s.ticketIdx]!;
        const resolver = t.resolvedBy === null || t.resolvedBy === 'AI' ? undefined : w.agent(t.resolvedBy);
        const eligible =
          t.status === 'resolved' &&
          resolver !== undefined &&
          resolver.orgId === t.orgId &&
          resolver.deletedAt === null &&
          !resolver.excludedFromAnalytics;
        expect(s.creditedAgentId).toBe(eligible ? resolver!.id : null);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(5);
  });

  it('a restored ticket is listed and readable again (our choice: the spec has no restore)', async () => {
    const h = await companion({ seed: 3, tickets: 40 });
    const t = h.world.ticketsSorted(h.world.orgA.id).find((x) => x.deletedAt === null)!;
    h.world.deleteTicket(t.number);
    expect((await api(h, 'GET', `/tickets/${t.number}`)).status).toBe(404);
    h.world.restoreTicket(t.number);
    const r = await api(h, 'GET', `/tickets/${t.number}`);
    expect(r.status).toBe(200);
    expect(r.body.data.id).toBe(t.id);
    expect((await served(h)).tickets.map((x) => (x as { id: string }).id)).toContain(t.id);
  });

  it('on a timer, applies rounds until stopped, without keeping the process alive', async () => {
    const h = await companion({ seed: 4, tickets: 40, live: { intervalMs: 20, changesPerTick: 2 } });
    const before = h.world.events.length + h.world.messages.length + h.world.sessions.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(h.live.running).toBe(true);
    const during = h.world.events.length + h.world.messages.length + h.world.sessions.length;
    expect(during).toBeGreaterThan(before);
    h.live.stop();
    expect(h.live.running).toBe(false);
    const stopped = h.world.events.length + h.world.messages.length + h.world.sessions.length;
    await new Promise((r) => setTimeout(r, 100));
    expect(h.world.events.length + h.world.messages.length + h.world.sessions.length).toBe(stopped);
  });

  it('a companion restarted with `since` serves the workspace it would have become, rounds at their times', async () => {
    const interval = 60_000;
    const since = new Date(Date.now() - 30 * interval - 1000);
    // The one that lived: generated at `since`, then a round every minute (simulated clock).
    let clockMs = since.getTime();
    const lived = await companion({ seed: 21, tickets: 60, now: () => new Date(clockMs) });
    for (let k = 1; k <= 30; k++) {
      clockMs = since.getTime() + k * interval;
      lived.live.tick(3);
    }
    clockMs = Date.now();
    const restarted = await companion({
      seed: 21,
      tickets: 60,
      live: { intervalMs: interval, changesPerTick: 3, since },
    });
    restarted.live.stop();
    expect(await served(restarted)).toEqual(await served(lived));
  });
});

describe('every seeded world exercises every credit rule of spec 2.7 within the last 90 days', () => {
  for (const seed of [1, 7, 11, 23, 42]) {
    it(`seed ${seed}`, async () => {
      const h = await companion({ seed, tickets: 120 });
      const w = h.world;
      const since = (Date.now() - 90 * DAY) * 1000; // survey times are microseconds
      const recent = w.surveys.filter((s) => s.orgId === w.orgA.id && s.sentAt >= since);
      const agentOf = (id: string | null) => (id === null ? undefined : w.agent(id));
      const ticketOf = (s: (typeof recent)[number]) => w.tickets[s.ticketIdx]!;
      const cases = {
        attributed: recent.some((s) => s.creditedAgentId !== null),
        unattributed: recent.some((s) => s.creditedAgentId === null),
        aiCredit: recent.some((s) => agentOf(s.creditedAgentId)?.kind === 'ai'),
        excludedResolverNoCredit: recent.some((s) => {
          const t = ticketOf(s);
          const resolver = t.resolvedBy === 'AI' ? 'AI' : agentOf(t.resolvedBy);
          return (
            (resolver === 'AI' || resolver?.excludedFromAnalytics === true) && s.creditedAgentId === null
          );
        }),
        answered: recent.some((s) => s.submittedAt !== null),
        unanswered: recent.some((s) => s.submittedAt === null),
      };
      console.info(`seed ${seed}: ${JSON.stringify(cases)}`);
      expect(cases).toEqual({
        attributed: true,
        unattributed: true,
        aiCredit: true,
        excludedResolverNoCredit: true,
        answered: true,
        unanswered: true,
      });
    });
  }
});
