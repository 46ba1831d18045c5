import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import { ErrorEnvelope, Message, pageEnvelope, Ticket, View } from '../../schemas/api/index.js';
import { api, start } from './helpers.js';

let h: CompanionHandle;
beforeAll(async () => {
  h = await start({ tickets: 300 });
});
afterAll(() => h.stop());

describe('2.1 envelope and cursors', () => {
  it('2.1 a cursor crawl of GET /tickets visits every ticket exactly once, created_at desc then id desc', async () => {
    const crawled: Array<{ id: string; created_at: string }> = [];
    let cursor: string | undefined;
    for (;;) {
      const r = await api(h, 'GET', '/tickets', { query: { limit: 37, ...(cursor ? { cursor } : {}) } });
      expect(r.status).toBe(200);
      const page = pageEnvelope(Ticket).parse(r.body);
      crawled.push(...page.data);
      if (!page.pagination.has_more) break;
      cursor = page.pagination.next_cursor ?? undefined;
    }
    const expected = h.world
      .ticketsSorted(h.world.orgA.id)
      .filter((t) => t.deletedAt === null)
      .map((t) => t.id)
      .reverse();
    expect(crawled.map((t) => t.id)).toEqual(expected);
    for (let i = 1; i < crawled.length; i++) {
      const a = crawled[i - 1] as { id: string; created_at: string };
      const b = crawled[i] as { id: string; created_at: string };
      expect(a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id)).toBe(true);
    }
  });

  it('2.1 a cursor used with a changed filter gives 400 VALIDATION_ERROR', async () => {
    const r = await api(h, 'GET', '/tickets', { query: { limit: 5 } });
    const cursor = r.body.pagination.next_cursor as string;
    const changed = await api(h, 'GET', '/tickets', { query: { limit: 6, cursor } });
    expect(changed.status).toBe(400);
    expect(ErrorEnvelope.parse(changed.body).code).toBe('VALIDATION_ERROR');
    const otherKey = await api(h, 'GET', '/tickets', { key: h.keys.readonly, query: { limit: 5, cursor } });
    expect(otherKey.status).toBe(400);
    const tampered = await api(h, 'GET', '/tickets', {
      query: { limit: 5, cursor: `${cursor.slice(0, -2)}xx` },
    });
    expect(tampered.status).toBe(400);
  });
});

describe('4.1 GET /tickets', () => {
  it('4.1 accepts limit 100 and rejects 101 and 0', async () => {
    expect((await api(h, 'GET', '/tickets', { query: { limit: 100 } })).body.data).toHaveLength(100);
    expect((await api(h, 'GET', '/tickets', { query: { limit: 101 } })).status).toBe(400);
    expect((await api(h, 'GET', '/tickets', { query: { limit: 0 } })).status).toBe(400);
  });
  it('4.1 rejects status, channel, date_from and unknown parameters', async () => {
    for (const p of ['status', 'channel', 'date_from', 'date_to', 'message_body', 'q']) {
      const r = await api(h, 'GET', '/tickets', { query: { [p]: 'x' } });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
  });
  it('4.1 applies a view filter and gives 404 VIEW_NOT_FOUND for hidden or other-org views', async () => {
    const views = await api(h, 'GET', '/views');
    const urgent = views.body.data.find((v: { name: string }) => v.name === 'Urgent');
    const r = await api(h, 'GET', '/tickets', { query: { view_id: urgent.id, limit: 100 } });
    expect(r.body.data.length).toBeGreaterThan(0);
    expect(r.body.data.every((t: { priority: string }) => t.priority === 'urgent')).toBe(true);
    expect(r.body.data.length).toBe(urgent.count);
    const hidden = views.body.data.find((v: { name: string }) => v.name === 'Billing escalations');
    const limited = await api(h, 'GET', '/tickets', {
      key: h.keys.agent_limited,
      query: { view_id: hidden.id },
    });
    expect(limited.status).toBe(404);
    expect(limited.body.code).toBe('VIEW_NOT_FOUND');
    const other = await api(h, 'GET', '/tickets', { key: h.keys.other_org, query: { view_id: urgent.id } });
    expect(other.status).toBe(404);
    expect(other.body.code).toBe('VIEW_NOT_FOUND');
  });
  it('4.1 include=ticket_fields adds custom field values', async () => {
    const r = await api(h, 'GET', '/tickets', { query: { include: 'ticket_fields', limit: 3 } });
    expect(r.body.data[0].ticket_fields.length).toBeGreaterThan(0);
    expect((await api(h, 'GET', '/tickets', { query: { include: 'everything' } })).status).toBe(400);
  });
});

describe('4.2–4.3 ticket and thread reads', () => {
  it('4.2 unknown or other-org ticket numbers give 404 TICKET_NOT_FOUND', async () => {
    expect((await api(h, 'GET', '/tickets/999999')).body.code).toBe('TICKET_NOT_FOUND');
    expect((await api(h, 'GET', '/tickets/900001')).status).toBe(404);
    expect((await api(h, 'GET', '/tickets/900001', { key: h.keys.other_org })).status).toBe(200);
    expect((await api(h, 'GET', '/tickets/1', { key: h.keys.other_org })).status).toBe(404);
  });
  it('2.3 reads exclude internal notes, drafts and system events and cut text to 10,000 chars', async () => {
    const t =
      h.world.tickets.find((x) => x.orgId === h.world.orgA.id && x.deletedAt === null) ?? h.world.tickets[0];
    if (!t) throw new Error('no ticket');
    h.world.addMessage(t.number, { role: 'agent', visibility: 'internal_note', text: 'secret note' });
    h.world.addMessage(t.number, { role: 'ai', visibility: 'draft', text: 'draft text' });
    h.world.addMessage(t.number, { role: 'customer', text: 'y'.repeat(12_000) });
    const r = await api(h, 'GET', `/tickets/${t.number}/messages`, { query: { limit: 100 } });
    const msgs = pageEnvelope(Message).parse(r.body).data;
    expect(msgs.some((m) => m.text === 'secret note' || m.text === 'draft text')).toBe(false);
    const public_ = h.world.messagesOf(t).filter((m) => m.visibility === 'public');
    expect(msgs).toHaveLength(public_.length);
    expect(msgs.some((m) => m.text?.length === 10_000)).toBe(true);
  });
  it('4.3 messages accept limit 100, reject 101, and crawl in both orders', async () => {
    const t = h.world.tickets.find((x) => x.messageIdxs.length >= 4 && x.orgId === h.world.orgA.id);
    if (!t) throw new Error('no ticket with a thread');
    expect((await api(h, 'GET', `/tickets/${t.number}/messages`, { query: { limit: 101 } })).status).toBe(
      400,
    );
    for (const order of ['asc', 'desc'] as const) {
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const r = await api(h, 'GET', `/tickets/${t.number}/messages`, {
          query: { order, limit: 1, ...(cursor ? { cursor } : {}) },
        });
        ids.push(...r.body.data.map((m: { id: string }) => m.id));
        cursor = r.body.pagination.next_cursor ?? undefined;
      } while (cursor);
      const expected = h.world
        .messagesOf(t)
        .filter((m) => m.visibility === 'public')
        .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
        .map((m) => m.id);
      expect(ids).toEqual(order === 'asc' ? expected : expected.reverse());
    }
  });
});

describe('4.4–4.5 ticket writes', () => {
  it('4.4 creates a ticket with defaults open/medium and 201', async () => {
    const r = await api(h, 'POST', '/tickets', {
      body: { channel: 'email', subject: 's'.repeat(500), contact: { email: 'new@x.example' } },
    });
    expect(r.status).toBe(201);
    const t = Ticket.parse(r.body.data);
    expect([t.status, t.priority]).toEqual(['open', 'medium']);
  });
  it('4.4 rejects a subject of 501 chars, 21 tags, 11 messages, unknown fields and unconnected channels', async () => {
    const bad = [
      { channel: 'email', subject: 's'.repeat(501) },
      { channel: 'email', tags: Array.from({ length: 21 }, (_, i) => `t${i}`) },
      { channel: 'email', tags: ['x'.repeat(101)] },
      { channel: 'email', messages: Array.from({ length: 11 }, () => ({ body: 'hi', from_agent: true })) },
      { channel: 'email', surprise: true },
      { channel: 'tiktok' },
      { subject: 'no channel' },
      { channel: 'email', note: 'n'.repeat(10_001) },
      { channel: 'email', messages: [{ from_agent: true }] },
    ];
    for (const body of bad) {
      const r = await api(h, 'POST', '/tickets', { body });
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.code).toBe('VALIDATION_ERROR');
    }
    const edge = await api(h, 'POST', '/tickets', {
      body: {
        channel: 'email',
        tags: Array.from({ length: 20 }, (_, i) => `edge${i}`),
        messages: Array.from({ length: 10 }, () => ({ body: 'hi', from_agent: true })),
      },
    });
    expect(edge.status).toBe(201);
  });
  it('4.5 changes status and records the event; 403 FORBIDDEN_SCOPE without tickets:write', async () => {
    const t = h.world.ticketsSorted(h.world.orgA.id).find((x) => x.status === 'open' && x.deletedAt === null);
    if (!t) throw new Error('no open ticket');
    const r = await api(h, 'POST', `/tickets/${t.number}`, { body: { status: 'resolved' } });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe('resolved');
    expect(h.world.eventsOf(t).some((e) => e.type === 'status_changed' && e.to === 'resolved')).toBe(true);
    const ro = await api(h, 'POST', `/tickets/${t.number}`, {
      key: h.keys.readonly,
      body: { status: 'open' },
    });
    expect(ro.status).toBe(403);
    expect(ro.body.code).toBe('FORBIDDEN_SCOPE');
  });
});

describe('4.9 views and 5 authentication', () => {
  it("4.9 a key linked to an agent sees only that agent's views; limit 100 ok, 101 rejected", async () => {
    const all = await api(h, 'GET', '/views', { key: h.keys.readonly });
    const limited = await api(h, 'GET', '/views', { key: h.keys.agent_limited });
    expect(all.body.data.length).toBeGreaterThanOrEqual(3);
    expect(limited.body.data.length).toBe(all.body.data.length - 1);
    for (const v of all.body.data) View.parse(v);
    expect((await api(h, 'GET', '/views', { query: { limit: 100 } })).status).toBe(200);
    expect((await api(h, 'GET', '/views', { query: { limit: 101 } })).status).toBe(400);
  });
  it('5.2 missing key gives 401 API_KEY_REQUIRED, a wrong one 401 INVALID_API_KEY; health needs none', async () => {
    expect((await api(h, 'GET', '/tickets', { key: null })).body.code).toBe('API_KEY_REQUIRED');
    expect((await api(h, 'GET', '/tickets', { key: 'sk_nope' })).body.code).toBe('INVALID_API_KEY');
    const health = await api(h, 'GET', '/health', { key: null });
    expect(health.status).toBe(200);
    expect(health.headers['x-ratelimit-limit']).toBe('120');
  });
  it('5.6 a legacy key with no scopes has full access; readonly lacks tags:read', async () => {
    expect((await api(h, 'GET', '/tags', { key: h.keys.legacy })).status).toBe(200);
    expect((await api(h, 'GET', '/tags', { key: h.keys.readonly })).body.code).toBe('FORBIDDEN_SCOPE');
  });
  it('4.8 directory lists page with limit 1–100 and crawl every agent once', async () => {
    expect((await api(h, 'GET', '/agents', { query: { limit: 101 } })).status).toBe(400);
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const r = await api(h, 'GET', '/agents', { query: { limit: 2, ...(cursor ? { cursor } : {}) } });
      ids.push(...r.body.data.map((a: { id: string }) => a.id));
      cursor = r.body.pagination.next_cursor ?? undefined;
    } while (cursor);
    const expected = h.world.agents.filter((a) => a.orgId === h.world.orgA.id && a.deletedAt === null);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBe(expected.length);
  });
});
