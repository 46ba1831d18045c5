import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import { Channel, Priority, TicketStatus, Timestamp } from '../../schemas/api/common.js';
import { type ApiResult, api, start } from './helpers.js';

// Variant worlds (companion/variant.ts, companion/README.md "Variant worlds").

const NOW = new Date('2026-03-01T12:00:00Z');
const now = () => NOW;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CSAT_WINDOW = { sent_from: '2026-01-01T00:00:00Z', sent_before: '2026-03-01T00:00:00Z', limit: 100 };
const SESSION_WINDOW = { from: '2026-02-01T00:00:00Z', before: '2026-03-01T00:00:00Z', limit: 100 };
const KPI = {
  query: 'FROM tickets\nSHOW new_tickets\nDURING last_month\nVISUALIZE new_tickets TYPE kpi',
  timezone: 'UTC',
};
const TABLE = {
  query:
    'FROM tickets\nSHOW new_tickets, resolved_tickets\nSINCE 2026-01-01 UNTIL 2026-02-28\nGROUP BY channel\nVISUALIZE new_tickets, resolved_tickets TYPE data_table',
  timezone: 'Europe/Berlin',
};

// biome-ignore lint/suspicious/noExplicitAny: presented items are inspected field by field
type Item = any;

/** The same reads, in the same order, against one companion (request ids follow the order). */
async function readAll(h: CompanionHandle): Promise<ApiResult[]> {
  return [
    await api(h, 'GET', '/tickets', { query: { limit: 30, include: 'ticket_fields' } }),
    await api(h, 'GET', '/tickets', { query: { limit: 100 } }),
    await api(h, 'GET', '/tickets/1', { query: { include: 'ticket_fields' } }),
    await api(h, 'GET', '/tickets/2'),
    await api(h, 'GET', '/tickets/3/messages'),
    await api(h, 'GET', '/tickets/4/messages', { query: { order: 'desc', limit: 2 } }),
    await api(h, 'GET', '/views'),
    await api(h, 'GET', '/tags'),
    await api(h, 'GET', '/teams'),
    await api(h, 'GET', '/agents'),
    await api(h, 'GET', '/reports/metrics'),
    await api(h, 'GET', '/csat-surveys', { query: { ...CSAT_WINDOW, include_comments: 'true' } }),
    await api(h, 'GET', '/agent-sessions', { query: SESSION_WINDOW }),
    await api(h, 'POST', '/reports/query', { body: KPI }),
    await api(h, 'GET', '/tickets/99999'),
    await api(h, 'GET', '/tickets', { query: { status: 'open' } }),
  ];
}

async function crawl(h: CompanionHandle, path: string, query: Record<string, string | number>) {
  const items: Item[] = [];
  let cursor: string | undefined;
  for (;;) {
    const r = await api(h, 'GET', path, { query: { ...query, ...(cursor ? { cursor } : {}) } });
    expect(r.status).toBe(200);
    items.push(...r.body.data);
    if (!r.body.pagination.has_more) return items;
    cursor = r.body.pagination.next_cursor;
  }
}

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f2e1f60000000049454e44ae426082',
  'hex',
);

async function confirmedPng(h: CompanionHandle, name: string): Promise<string> {
  const u = await api(h, 'POST', '/attachments/upload-url', {
    body: { file_name: name, mime_type: 'image/png', size: PNG.length },
  });
  expect(u.status).toBe(200);
  const put = await request(u.body.data.upload_url, {
    method: 'PUT',
    body: PNG,
    headers: { 'content-type': 'image/png' },
  });
  await put.body.text();
  expect((await api(h, 'POST', `/attachments/${u.body.data.id}/confirm`)).status).toBe(200);
  return u.body.data.id;
}

describe('variant 0: the default world is unchanged', () => {
  let plain: CompanionHandle;
  let zero: CompanionHandle;
  beforeAll(async () => {
    plain = await start({ seed: 11, tickets: 120, now });
    zero = await start({ seed: 11, tickets: 120, now, variant: 0 });
  });
  afterAll(async () => {
    await plain.stop();
    await zero.stop();
  });

  it('variant 0 and no variant serve byte-identical bodies on every read', async () => {
    const a = await readAll(plain);
    const b = await readAll(zero);
    expect(b.map((r) => r.status)).toEqual(a.map((r) => r.status));
    for (let i = 0; i < a.length; i++) {
      expect(JSON.stringify(b[i]?.body)).toBe(JSON.stringify(a[i]?.body));
    }
  });

  it('the default world keeps its shapes: no envelope extras, the schemas/api keys and nothing else', async () => {
    const list = await api(zero, 'GET', '/tickets', { query: { limit: 100, include: 'ticket_fields' } });
    expect(Object.keys(list.body)).toEqual(['success', 'data', 'pagination']);
    expect(Object.keys(list.body.pagination)).toEqual(['has_more', 'next_cursor']);
    for (const t of list.body.data as Item[]) {
      expect(Object.keys(t)).toEqual([
        'id',
        'ticket_number',
        'subject',
        'status',
        'priority',
        'channel',
        'created_at',
        'updated_at',
        'tags',
        'contact',
        'ticket_type',
        'parent_ticket_id',
        'assignee_id',
        'team_id',
        'language',
        'is_spam',
        'resolved_at',
        'ticket_fields',
      ]);
      if (t.contact !== null) {
        expect(Object.keys(t.contact)).toEqual(['id', 'email', 'first_name', 'last_name', 'phone']);
        expect(t.contact.id).toMatch(UUID);
      }
      for (const f of t.ticket_fields) {
        expect(Object.keys(f)).toEqual(['field_id', 'name', 'type', 'value']);
        expect(['text', 'number', 'boolean', 'dropdown', 'multi_select', 'date']).toContain(f.type);
        expect(f.value === null || typeof f.value !== 'object' || Array.isArray(f.value)).toBe(true);
      }
    }
    const msgs = await api(zero, 'GET', '/tickets/3/messages');
    for (const m of msgs.body.data as Item[]) {
      expect(['customer', 'agent', 'ai']).toContain(m.role);
      expect(['inbound', 'outbound']).toContain(m.direction);
    }
    const views = await api(zero, 'GET', '/views');
    for (const v of views.body.data as Item[]) {
      expect(Object.keys(v)).toEqual(['id', 'name', 'count', 'filters', 'shared']);
      for (const f of v.filters) expect(Object.keys(f)).toEqual(['condition', 'operator', 'options']);
    }
    const metrics = await api(zero, 'GET', '/reports/metrics');
    expect(Object.keys(metrics.body)).toEqual(['success', 'data']);
    for (const m of metrics.body.data as Item[]) expect(['integer', 'number']).toContain(m.dataType);
  });
});

describe('variant 1: every open point takes another reading somewhere in a 200-ticket world', () => {
  let h: CompanionHandle;
  let tickets: Item[];
  let messages: Item[];
  beforeAll(async () => {
    h = await start({ tickets: 200, now, variant: 1 });
    tickets = await crawl(h, '/tickets', { limit: 100, include: 'ticket_fields' });
    messages = [];
    for (const t of tickets) {
      messages.push(...(await crawl(h, `/tickets/${t.ticket_number}/messages`, { limit: 100 })));
    }
  });
  afterAll(() => h.stop());

  it('2.2 contact: a numeric or non-UUID id, nested names without first_name/last_name/phone; null stays', () => {
    const contacts = tickets.map((t) => t.contact);
    expect(contacts.some((c) => c !== null && typeof c.id === 'number')).toBe(true);
    expect(contacts.some((c) => typeof c?.id === 'string' && !UUID.test(c.id))).toBe(true);
    expect(contacts.some((c) => c?.name !== undefined && !('first_name' in c) && !('phone' in c))).toBe(true);
    expect(contacts.some((c) => c === null)).toBe(true);
    // Most contacts keep the default shape.
    const plain = contacts.filter((c) => c !== null && typeof c.id === 'string' && UUID.test(c.id));
    expect(plain.length).toBeGreaterThan(contacts.length * 0.7);
  });

  it('2.2 custom-field values: objects, arrays of objects, a type outside ours, an entry with extra keys', () => {
    const fields = tickets.flatMap((t) => t.ticket_fields as Item[]);
    const isObj = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
    expect(fields.some((f) => isObj(f.value))).toBe(true);
    expect(fields.some((f) => Array.isArray(f.value) && f.value.some(isObj))).toBe(true);
    expect(fields.some((f) => f.value === null)).toBe(true);
    expect(
      fields.some((f) => !['text', 'number', 'boolean', 'dropdown', 'multi_select', 'date'].includes(f.type)),
    ).toBe(true);
    expect(
      fields.some((f) => Object.keys(f).some((k) => !['field_id', 'name', 'type', 'value'].includes(k))),
    ).toBe(true);
  });

  it('2.2 further ticket fields: unknown extras on some tickets, one of our not-shown extras missing on others', () => {
    const known = new Set(['id', 'ticket_number', 'subject', 'status', 'priority', 'channel', 'created_at']);
    for (const k of ['updated_at', 'tags', 'contact', 'ticket_type', 'parent_ticket_id', 'assignee_id'])
      known.add(k);
    for (const k of ['team_id', 'language', 'is_spam', 'resolved_at', 'ticket_fields']) known.add(k);
    expect(tickets.some((t) => Object.keys(t).some((k) => !known.has(k)))).toBe(true);
    expect(
      tickets.some((t) => ['language', 'is_spam', 'team_id', 'resolved_at'].some((k) => !(k in t))),
    ).toBe(true);
    // The spec's table (and the contact read of 2.2) is always there.
    for (const t of tickets) {
      for (const k of ['id', 'ticket_number', 'subject', 'status', 'priority', 'channel', 'created_at']) {
        expect(t).toHaveProperty(k);
      }
      for (const k of ['updated_at', 'tags', 'contact']) expect(t).toHaveProperty(k);
    }
  });

  it('2.3 messages: other roles, directions, delivery states and unknown fields', () => {
    expect(messages.some((m) => !['customer', 'agent', 'ai'].includes(m.role))).toBe(true);
    expect(messages.some((m) => !['inbound', 'outbound'].includes(m.direction))).toBe(true);
    expect(messages.some((m) => !['queued', 'sent', 'delivered', 'failed'].includes(m.status))).toBe(true);
    const base = ['id', 'ticket_id', 'ticket_number', 'role', 'direction', 'text', 'channel', 'author_name'];
    base.push('status', 'created_at', 'attachments');
    expect(messages.some((m) => Object.keys(m).some((k) => !base.includes(k)))).toBe(true);
  });

  it('2.3 attachment items with other keys (and other ids) on a sent message, the same on every read', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await confirmedPng(h, `photo-${i}.png`));
    const sent = await api(h, 'POST', '/tickets/5/messages', {
      body: { body: 'photos', attachment_ids: ids },
    });
    expect(sent.status).toBe(201);
    const thread = await crawl(h, '/tickets/5/messages', { limit: 100 });
    const read = thread.find((m) => m.id === sent.body.data.id);
    expect(read.attachments).toEqual(sent.body.data.attachments);
    expect(read.attachments).toHaveLength(6);
    const base = ['id', 'file_name', 'mime_type', 'size', 'public_url'];
    const other = (read.attachments as Item[]).filter((a) => Object.keys(a).join() !== base.join());
    expect(other.length).toBeGreaterThan(0);
    expect(other.some((a) => typeof a.id !== 'string' || !UUID.test(a.id) || 'file' in a)).toBe(true);
  });

  it('2.4 views: filter entries of other structures and unknown fields; ids and counts as in the default world', async () => {
    const views = (await api(h, 'GET', '/views')).body.data as Item[];
    const entries = views.flatMap((v) => v.filters as Item[]);
    expect(entries.some((f) => typeof f.condition !== 'string' || !('operator' in f))).toBe(true);
    expect(views.some((v) => Object.keys(v).length > 5)).toBe(true);
    const plain = await start({ tickets: 200, now });
    try {
      const base = (await api(plain, 'GET', '/views')).body.data as Item[];
      expect(views.map((v) => [v.id, v.name, v.count, v.shared])).toEqual(
        base.map((v) => [v.id, v.name, v.count, v.shared]),
      );
      // A view still filters the ticket list by its saved filters.
      for (const v of views) {
        const listed = await crawl(h, '/tickets', { view_id: v.id, limit: 100 });
        expect(listed).toHaveLength(v.count);
      }
    } finally {
      await plain.stop();
    }
  });

  it('2.6 tags, teams, agents: missing fields, reshaped values, numeric tag ids, unknown fields', async () => {
    const tags = (await api(h, 'GET', '/tags')).body.data as Item[];
    const teams = (await api(h, 'GET', '/teams')).body.data as Item[];
    const agents = (await api(h, 'GET', '/agents')).body.data as Item[];
    expect(tags.some((t) => !('created_at' in t))).toBe(true);
    expect(tags.some((t) => typeof t.id === 'number')).toBe(true);
    expect(tags.every((t) => typeof t.name === 'string')).toBe(true);
    expect(
      teams.some(
        (t) =>
          !('created_at' in t) ||
          Object.keys(t).length > 4 ||
          t.agent_ids.some((a: unknown) => typeof a === 'object'),
      ),
    ).toBe(true);
    const reshaped = (a: Item) =>
      !('kind' in a) ||
      !('team_ids' in a) ||
      typeof a.active === 'string' ||
      !['human', 'ai'].includes(a.kind) ||
      a.team_ids.some((x: unknown) => typeof x === 'object') ||
      Object.keys(a).length > 7;
    expect(agents.some(reshaped)).toBe(true);
    // Team and agent ids keep their form: tickets, exports and reports refer to them.
    for (const x of [...teams, ...agents]) expect(typeof x.id).toBe('string');
  });

  it('2.9 metric catalog: other dataType and group values, unknown fields; id, format, aggregation kept', async () => {
    const v = (await api(h, 'GET', '/reports/metrics')).body.data as Item[];
    const plain = await start({ tickets: 50, now });
    try {
      const base = (await api(plain, 'GET', '/reports/metrics')).body.data as Item[];
      expect(
        v.map((m) => [m.id, m.format, m.aggregation, m.attribution, m.snapshot, m.higherIsBetter]),
      ).toEqual(
        base.map((m) => [m.id, m.format, m.aggregation, m.attribution, m.snapshot, m.higherIsBetter]),
      );
    } finally {
      await plain.stop();
    }
    expect(v.some((m) => !['integer', 'number'].includes(m.dataType))).toBe(true);
    expect(v.some((m) => 'unit' in m)).toBe(true);
  });

  it('2.7/2.8 exports: harmless unknown fields on items and meta, never a forbidden one', async () => {
    const csat = await api(h, 'GET', '/csat-surveys', {
      query: { ...CSAT_WINDOW, include_comments: 'true' },
    });
    const sessions = await api(h, 'GET', '/agent-sessions', { query: SESSION_WINDOW });
    const csatBase = ['id', 'ticket_id', 'ticket_number', 'credited_agent_id', 'credited_agent_name'];
    csatBase.push('attribution_source', 'score', 'sent_at', 'submitted_at', 'comment');
    const extra = (items: Item[], base: string[]) =>
      items.some((r) => Object.keys(r).some((k) => !base.includes(k)));
    expect(extra(csat.body.data, csatBase)).toBe(true);
    const sessionBase = ['id', 'agent_id', 'session_start', 'session_end', 'last_activity', 'updated_at'];
    expect(extra(sessions.body.data, sessionBase)).toBe(true);
    expect(csat.body.meta.api_version).toBeDefined();
    expect(sessions.body.meta.api_version).toBeDefined();
    const forbidden = ['channel', 'survey_url', 'token', 'survey_token', 'email', 'contact', 'body', 'text'];
    forbidden.push('ip', 'ip_address', 'browser', 'user_agent');
    for (const r of [...csat.body.data, ...sessions.body.data] as Item[]) {
      for (const k of forbidden) expect(r).not.toHaveProperty(k);
    }
  });

  it('2.1 envelope: unknown top-level fields and a `limit` inside pagination on every list', async () => {
    for (const [path, query] of [
      ['/tickets', { limit: 7 }],
      ['/tickets/3/messages', {}],
      ['/views', {}],
      ['/tags', {}],
      ['/teams', {}],
      ['/agents', {}],
      ['/csat-surveys', CSAT_WINDOW],
      ['/agent-sessions', SESSION_WINDOW],
    ] as const) {
      const r = await api(h, 'GET', path, { query });
      expect(r.status).toBe(200);
      expect(r.body.success).toBe(true);
      expect(Object.keys(r.body).some((k) => !['success', 'data', 'pagination', 'meta'].includes(k))).toBe(
        true,
      );
      expect(r.body.pagination.limit).toBe('limit' in query ? query.limit : 50);
      expect(typeof r.body.pagination.has_more).toBe('boolean');
    }
    const tickets7 = await api(h, 'GET', '/tickets', { query: { limit: 7 } });
    expect(tickets7.body.links.next).toContain(encodeURIComponent(tickets7.body.pagination.next_cursor));
    // Errors keep the spec's envelope exactly.
    const err = await api(h, 'GET', '/tickets/99999');
    expect(Object.keys(err.body)).toEqual(['success', 'code', 'message', 'request_id']);
  });
});

describe('variant determinism', () => {
  let a: CompanionHandle;
  beforeAll(async () => {
    a = await start({ tickets: 200, now, variant: 1 });
  });
  afterAll(() => a.stop());

  it('a ticket in the list and in its detail is deep-equal, with and without ticket fields', async () => {
    for (const include of [{ include: 'ticket_fields' }, {}]) {
      const list = await crawl(a, '/tickets', { limit: 100, ...include });
      expect(list).toHaveLength(200);
      for (const t of list) {
        const detail = await api(a, 'GET', `/tickets/${t.ticket_number}`, { query: include });
        expect(detail.status).toBe(200);
        expect(detail.body.data).toEqual(t);
      }
    }
  });

  it('a message reads the same in both orders and on every page size', async () => {
    const numbers = [1, 2, 3, 10, 20, 40, 80, 160];
    for (const n of numbers) {
      const asc = await crawl(a, `/tickets/${n}/messages`, { limit: 100 });
      const desc = await crawl(a, `/tickets/${n}/messages`, { limit: 2, order: 'desc' });
      expect(desc.reverse()).toEqual(asc);
    }
  });

  it('two companions with the same seed and variant serve identical bodies (a restart changes nothing)', async () => {
    const first = await start({ tickets: 200, now, variant: 1 });
    const second = await start({ tickets: 200, now, variant: 1 });
    try {
      const ra = await readAll(first);
      const rb = await readAll(second);
      for (let i = 0; i < ra.length; i++) {
        expect(rb[i]?.status).toBe(ra[i]?.status);
        expect(JSON.stringify(rb[i]?.body)).toBe(JSON.stringify(ra[i]?.body));
      }
      // A second round on the same companion: the items are the same, only the envelope's request ids move on.
      const again = await readAll(first);
      for (let i = 0; i < ra.length; i++) expect(again[i]?.body.data).toEqual(ra[i]?.body.data);
    } finally {
      await first.stop();
      await second.stop();
    }
  });

  it('another variant is another world of the same items', async () => {
    const two = await start({ tickets: 200, now, variant: 2 });
    try {
      const one = await crawl(a, '/tickets', { limit: 100, include: 'ticket_fields' });
      const other = await crawl(two, '/tickets', { limit: 100, include: 'ticket_fields' });
      expect(other.map((t) => t.id)).toEqual(one.map((t) => t.id));
      expect(JSON.stringify(other)).not.toBe(JSON.stringify(one));
    } finally {
      await two.stop();
    }
  });
});

describe('variant: strict fields stay strict', () => {
  let v: CompanionHandle;
  let plain: CompanionHandle;
  beforeAll(async () => {
    v = await start({ tickets: 200, now, variant: 1 });
    plain = await start({ tickets: 200, now });
  });
  afterAll(async () => {
    await v.stop();
    await plain.stop();
  });

  const isTimestamp = (x: unknown) => Timestamp.safeParse(x).success && !Number.isNaN(Date.parse(String(x)));

  it('tickets: ids, numbers, status/priority/channel, timestamps and tags as in the default world', async () => {
    const vt = await crawl(v, '/tickets', { limit: 100, include: 'ticket_fields' });
    const pt = await crawl(plain, '/tickets', { limit: 100, include: 'ticket_fields' });
    const strict = (t: Item) => [t.id, t.ticket_number, t.subject, t.status, t.priority, t.channel];
    const strict2 = (t: Item) => [t.created_at, t.updated_at, t.tags];
    expect(vt.map(strict)).toEqual(pt.map(strict));
    expect(vt.map(strict2)).toEqual(pt.map(strict2));
    for (const t of vt) {
      expect(t.id).toMatch(UUID);
      expect(Number.isInteger(t.ticket_number)).toBe(true);
      expect(TicketStatus.options).toContain(t.status);
      expect(Priority.options).toContain(t.priority);
      expect(Channel.options).toContain(t.channel);
      expect(isTimestamp(t.created_at) && isTimestamp(t.updated_at)).toBe(true);
      expect(t.tags.every((x: unknown) => typeof x === 'string')).toBe(true);
    }
  });

  it('messages: ids, ticket ids and numbers, channel, timestamps, text as in the default world', async () => {
    for (const n of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 50, 100, 150, 200]) {
      const vm = await crawl(v, `/tickets/${n}/messages`, { limit: 100 });
      const pm = await crawl(plain, `/tickets/${n}/messages`, { limit: 100 });
      const strict = (m: Item) => [m.id, m.ticket_id, m.ticket_number, m.text, m.channel, m.created_at];
      expect(vm.map(strict)).toEqual(pm.map(strict));
      for (const m of vm) {
        expect(m.id).toMatch(UUID);
        expect(m.ticket_id).toMatch(UUID);
        expect(Channel.options).toContain(m.channel);
        expect(isTimestamp(m.created_at)).toBe(true);
      }
    }
  });

  it('exports: the same surveys and sessions in the same order with their strict fields', async () => {
    const csatQ = { ...CSAT_WINDOW, limit: 10 };
    const vs = await crawl(v, '/csat-surveys', csatQ);
    const ps = await crawl(plain, '/csat-surveys', csatQ);
    const strict = (r: Item) => [
      r.id,
      r.ticket_id,
      r.ticket_number,
      r.credited_agent_id,
      r.attribution_source,
    ];
    const strict2 = (r: Item) => [r.score, r.sent_at, r.submitted_at];
    expect(vs.map(strict)).toEqual(ps.map(strict));
    expect(vs.map(strict2)).toEqual(ps.map(strict2));
    const sessionQ = { ...SESSION_WINDOW, limit: 25 };
    const vx = await crawl(v, '/agent-sessions', sessionQ);
    const px = await crawl(plain, '/agent-sessions', sessionQ);
    const sStrict = (r: Item) => [
      r.id,
      r.agent_id,
      r.session_start,
      r.session_end,
      r.last_activity,
      r.updated_at,
    ];
    expect(vx.map(sStrict)).toEqual(px.map(sStrict));
    for (const r of vx) {
      expect(r.id).toMatch(UUID);
      expect(isTimestamp(r.session_start) && isTimestamp(r.last_activity)).toBe(true);
    }
  });

  it('report queries compute the same data; only the envelope may carry more', async () => {
    for (const body of [KPI, TABLE]) {
      const rv = await api(v, 'POST', '/reports/query', { body });
      const rp = await api(plain, 'POST', '/reports/query', { body });
      expect(rv.status).toBe(200);
      expect(rv.body.success).toBe(true);
      expect(JSON.stringify(rv.body.data)).toBe(JSON.stringify(rp.body.data));
    }
  });

  it('writes answer as before apart from the item rewrite; an idempotent replay stays identical', async () => {
    const created = await api(v, 'POST', '/tickets', {
      body: {
        channel: 'email',
        subject: 'variant',
        contact: { email: 'ann@mail.example' },
        messages: [{ body: 'hi' }],
      },
    });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body)).toEqual(['success', 'data']);
    const n = created.body.data.ticket_number;
    expect((await api(v, 'GET', `/tickets/${n}`)).body.data).toEqual(created.body.data);
    const headers = { 'idempotency-key': 'variant-1' };
    const first = await api(v, 'POST', `/tickets/${n}/messages`, { body: { body: 'once' }, headers });
    const again = await api(v, 'POST', `/tickets/${n}/messages`, { body: { body: 'once' }, headers });
    expect(first.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(first.body.data.id).toMatch(UUID);
    expect(first.body.data.status).toBe('queued');
  });
});
