import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import type { SupportApiClient } from '../../connectors/support-api/client.js';
import { SupportApiError } from '../../connectors/support-api/errors.js';
import { fetchMetricCatalog } from '../../connectors/support-api/paginate.js';
import { planWindows } from '../../connectors/support-api/windows.js';
import {
  collectItems,
  iterateAgentSessions,
  iterateAgents,
  iterateCsatSurveys,
  iterateMessages,
  iterateTags,
  iterateTeams,
  iterateTickets,
  iterateViews,
} from '../support/iterate.js';
import { clientFor, companion } from './support/companion.js';

let handle: CompanionHandle;
let client: SupportApiClient;

beforeAll(async () => {
  handle = await companion({ seed: 11, tickets: 240, rateLimits: false });
  client = clientFor(handle).client;
});
afterAll(async () => {
  await client?.close();
  await handle?.stop();
});

const sortIds = (xs: Array<{ id: string }>) => xs.map((x) => x.id).sort();

describe('iterators crawl a seeded companion world completely and exactly', () => {
  it('tickets (with ticket fields): every readable ticket of the org once, newest first', async () => {
    const w = handle.world;
    const expected = w.tickets.filter((t) => t.orgId === w.orgA.id && t.deletedAt === null);
    const pages = [];
    for await (const p of iterateTickets(client, { limit: 37, includeTicketFields: true })) pages.push(p);
    const items = pages.flatMap((p) => p.items);
    expect(items.length).toBe(expected.length);
    expect(new Set(items.map((t) => t.id)).size).toBe(items.length);
    expect(sortIds(items)).toEqual(sortIds(expected));
    for (const t of items) {
      const rec = w.ticketById(t.id)!;
      expect(t.ticket_number).toBe(rec.number);
      expect(t.status).toBe(rec.status);
      expect(t.ticket_fields).toBeDefined();
    }
    const created = items.map((t) => t.created_at);
    expect([...created].sort().reverse()).toEqual(created);
    // resume contract: each page knows the cursor that produced it
    expect(pages[0]!.cursor).toBeNull();
    for (let i = 1; i < pages.length; i++) expect(pages[i]!.cursor).toBe(pages[i - 1]!.nextCursor);
    expect(pages.at(-1)!.hasMore).toBe(false);
    expect(pages.every((p) => p.rawItems.length === p.items.length)).toBe(true);
  });

  it('tickets by view match the view count', async () => {
    const views = await collectItems(iterateViews(client, { limit: 3 }));
    const view = views.find((v) => v.count > 0)!;
    const items = await collectItems(iterateTickets(client, { viewId: view.id, limit: 10 }));
    expect(items.length).toBe(view.count);
  });

  it('threads (asc): public messages of each ticket, oldest first', async () => {
    const w = handle.world;
    const tickets = w.tickets.filter((t) => t.orgId === w.orgA.id && t.deletedAt === null).slice(0, 25);
    for (const t of tickets) {
      const items = await collectItems(iterateMessages(client, { ticketNumber: t.number, limit: 3 }));
      const expected = w.messagesOf(t).filter((m) => m.visibility === 'public');
      expect(sortIds(items)).toEqual(sortIds(expected));
      const created = items.map((m) => m.created_at);
      expect([...created].sort()).toEqual(created);
    }
  });

  it('views, tags, teams, agents: the org entities, once each', async () => {
    const w = handle.world;
    const adminAgent = w.key('admin').agentId;
    const views = await collectItems(iterateViews(client, { limit: 2 }));
    const expectedViews = w.views.filter(
      (v) =>
        v.orgId === w.orgA.id &&
        (v.visibleToAgentIds === null || (adminAgent !== null && v.visibleToAgentIds.includes(adminAgent))),
    );
    expect(sortIds(views)).toEqual(sortIds(expectedViews));
    expect(sortIds(await collectItems(iterateTags(client, { limit: 4 })))).toEqual(
      sortIds(w.tags.filter((t) => t.orgId === w.orgA.id)),
    );
    expect(sortIds(await collectItems(iterateTeams(client, { limit: 2 })))).toEqual(
      sortIds(w.teams.filter((t) => t.orgId === w.orgA.id)),
    );
    expect(sortIds(await collectItems(iterateAgents(client, { limit: 3 })))).toEqual(
      sortIds(w.agents.filter((a) => a.orgId === w.orgA.id && a.deletedAt === null)),
    );
  });

  it('metric catalog: unpaginated, 50 metrics', async () => {
    const p = await fetchMetricCatalog(client);
    expect(p.items.length).toBe(50);
    expect(p.hasMore).toBe(false);
  });

  it('CSAT surveys over planned windows (sent and submitted): every eligible survey once', async () => {
    const w = handle.world;
    const eligible = w.surveys.filter((s) => {
      const t = w.tickets[s.ticketIdx];
      return s.orgId === w.orgA.id && t && t.deletedAt === null && t.ticketType !== 'side' && !t.imported;
    });
    expect(eligible.length).toBeGreaterThan(0);
    const minMs = Math.floor(Math.min(...w.surveys.map((s) => s.sentAt)) / 1000);
    const maxMs = Math.ceil(Math.max(...w.surveys.map((s) => s.submittedAt ?? s.sentAt)) / 1000) + 1;
    const windows = planWindows({ from: minMs, to: maxMs, maxWindowMs: 30 * 24 * 3_600_000 });
    expect(windows.length).toBeGreaterThan(1);
    for (const by of ['sent', 'submitted'] as const) {
      const got = [];
      for (const win of windows) {
        got.push(
          ...(await collectItems(
            iterateCsatSurveys(client, {
              by,
              from: win.windowStart,
              before: win.windowEnd,
              limit: 25,
              includeComments: true,
            }),
          )),
        );
      }
      const expected = by === 'sent' ? eligible : eligible.filter((s) => s.submittedAt !== null);
      expect(got.length).toBe(expected.length);
      expect(sortIds(got)).toEqual(sortIds(expected));
    }
  });

  it('agent sessions over planned windows: every session of the org (overlapping windows may repeat one)', async () => {
    const w = handle.world;
    const sessions = w.sessions.filter((s) => s.orgId === w.orgA.id);
    const from = Math.min(...sessions.map((s) => s.start));
    const to = Math.max(...sessions.map((s) => s.start)) + 1;
    const ids = new Set<string>();
    let pages = 0;
    for (const win of planWindows({ from, to, maxWindowMs: 20 * 24 * 3_600_000 })) {
      for await (const p of iterateAgentSessions(client, {
        from: win.windowStart,
        before: win.windowEnd,
        limit: 50,
      })) {
        pages += 1;
        expect(p.meta?.date_filter).toBe('recorded_interval_overlap');
        for (const s of p.items) ids.add(s.id);
      }
    }
    expect(pages).toBeGreaterThan(1);
    expect([...ids].sort()).toEqual(sortIds(sessions));
  });

  it('a key without analytics permissions fails fast with FORBIDDEN_SCOPE, not retried', async () => {
    const { client: ro } = clientFor(handle, 'readonly');
    handle.clearRequestLog();
    const err = await collectItems(
      iterateAgentSessions(ro, { from: '2025-01-01T00:00:00Z', before: '2025-01-02T00:00:00Z' }),
    ).catch((e) => e);
    expect(err).toBeInstanceOf(SupportApiError);
    expect(err.code).toBe('FORBIDDEN_SCOPE');
    expect(err.retryable).toBe(false);
    expect(handle.requestLog.length).toBe(1);
    await ro.close();
  });
});
