import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import { overlaps } from '../../companion/rules/windows.js';
import {
  AgentSession,
  AgentSessionMeta,
  CsatMeta,
  CsatSurvey,
  exportEnvelope,
} from '../../schemas/api/index.js';
import { api, start } from './helpers.js';

const NOW = new Date('2026-11-22T12:00:00Z');
const H = 3_600_000;
let h: CompanionHandle;
beforeAll(async () => {
  h = await start({ tickets: 400, now: () => NOW });
});
afterAll(() => h.stop());

describe('4.6 idempotency of message sends', () => {
  it('4.6 concurrent duplicates create one message; the rest replay it or get 409 IDEMPOTENCY_KEY_IN_PROGRESS', async () => {
    const t = h.world.ticketByNumber(10);
    if (!t) throw new Error('no ticket 10');
    const before = t.messageIdxs.length;
    const body = { body: 'hello once' };
    const headers = { 'idempotency-key': 'dup-1' };
    const results = await Promise.all(
      Array.from({ length: 8 }, () => api(h, 'POST', '/tickets/10/messages', { body, headers })),
    );
    expect(t.messageIdxs.length).toBe(before + 1);
    const codes = results.map((r) => r.status).sort();
    expect(codes).toContain(201);
    expect(codes.every((c) => c === 201 || c === 409)).toBe(true);
    expect(
      results.filter((r) => r.status === 409).every((r) => r.body.code === 'IDEMPOTENCY_KEY_IN_PROGRESS'),
    ).toBe(true);
    const replay = await api(h, 'POST', '/tickets/10/messages', { body, headers });
    const first = results.find((r) => r.status === 201);
    expect(replay.body).toEqual(first?.body);
    expect(t.messageIdxs.length).toBe(before + 1);
    const conflict = await api(h, 'POST', '/tickets/10/messages', { body: { body: 'other' }, headers });
    expect(conflict.status).toBe(400);
    expect(conflict.body.code).toBe('IDEMPOTENCY_KEY_CONFLICT');
  });
  it('4.6 from_agent must be a real agent; body or html_body is required; 404 TICKET_NOT_FOUND', async () => {
    expect(
      (await api(h, 'POST', '/tickets/10/messages', { body: { body: 'x', from_agent: 'nobody@x.example' } }))
        .status,
    ).toBe(400);
    expect((await api(h, 'POST', '/tickets/10/messages', { body: { type: 'note' } })).status).toBe(400);
    expect((await api(h, 'POST', '/tickets/99999/messages', { body: { body: 'x' } })).body.code).toBe(
      'TICKET_NOT_FOUND',
    );
    expect(
      (await api(h, 'POST', '/tickets/10/messages', { body: { body: 'b'.repeat(100_001) } })).status,
    ).toBe(400);
    expect(
      (await api(h, 'POST', '/tickets/10/messages', { body: { body: 'b'.repeat(100_000) } })).status,
    ).toBe(201);
  });
});

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201a5f2e1f60000000049454e44ae426082',
  'hex',
);

describe('4.7 attachments', () => {
  async function upload(mime: string, data: Buffer, size = data.length) {
    const u = await api(h, 'POST', '/attachments/upload-url', {
      body: { file_name: 'f', mime_type: mime, size },
    });
    expect(u.status).toBe(200);
    const put = await request(u.body.data.upload_url, {
      method: 'PUT',
      body: data,
      headers: { 'content-type': mime },
    });
    await put.body.text();
    return { id: u.body.data.id as string, putStatus: put.statusCode };
  }
  it('4.7 confirms a real PNG, uses it once, and rejects reuse', async () => {
    const { id } = await upload('image/png', PNG);
    expect((await api(h, 'POST', `/attachments/${id}/confirm`)).status).toBe(200);
    const sent = await api(h, 'POST', '/tickets/11/messages', {
      body: { body: 'see file', attachment_ids: [id] },
    });
    expect(sent.status).toBe(201);
    expect(sent.body.data.attachments[0].id).toBe(id);
    const again = await api(h, 'POST', '/tickets/11/messages', {
      body: { body: 'again', attachment_ids: [id] },
    });
    expect(again.status).toBe(400);
  });
  it('4.7 confirm sniffs content: text declared as PNG, binary declared as CSV are rejected; CSV accepted', async () => {
    const fake = await upload('image/png', Buffer.from('just text'));
    expect((await api(h, 'POST', `/attachments/${fake.id}/confirm`)).status).toBe(400);
    const bin = await upload('text/csv', PNG);
    expect((await api(h, 'POST', `/attachments/${bin.id}/confirm`)).status).toBe(400);
    const csv = await upload('text/csv', Buffer.from('a,b\n1,2\n'));
    expect((await api(h, 'POST', `/attachments/${csv.id}/confirm`)).status).toBe(200);
  });
  it('4.7 rejects 20 MB + 1 byte at upload-url, unconfirmed ids, and unknown ids with ATTACHMENT_NOT_FOUND', async () => {
    const big = await api(h, 'POST', '/attachments/upload-url', {
      body: { file_name: 'f', mime_type: 'video/mp4', size: 20 * 1024 * 1024 + 1 },
    });
    expect(big.status).toBe(400);
    const ok = await api(h, 'POST', '/attachments/upload-url', {
      body: { file_name: 'f', mime_type: 'video/mp4', size: 20 * 1024 * 1024 },
    });
    expect(ok.status).toBe(200);
    const unconfirmed = await api(h, 'POST', '/tickets/11/messages', {
      body: { body: 'x', attachment_ids: [ok.body.data.id] },
    });
    expect(unconfirmed.status).toBe(400);
    const unknown = await api(h, 'POST', '/attachments/00000000-0000-4000-8000-000000000000/confirm');
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('ATTACHMENT_NOT_FOUND');
  });
});

describe('4.13 GET /csat-surveys', () => {
  it('4.13 crawls a sent window in (sent_at, id) order with meta and no comment unless asked', async () => {
    const query = { sent_from: '2026-08-24T12:00:00Z', sent_before: '2026-11-22T12:00:00Z', limit: 50 };
    const items: Array<{ id: string; sent_at: string }> = [];
    let cursor: string | undefined;
    do {
      const r = await api(h, 'GET', '/csat-surveys', { query: { ...query, ...(cursor ? { cursor } : {}) } });
      expect(r.status).toBe(200);
      const page = exportEnvelope(CsatSurvey, CsatMeta).parse(r.body);
      expect(page.meta.comments_included).toBe(false);
      for (const s of page.data) expect('comment' in s).toBe(false);
      items.push(...page.data);
      cursor = page.pagination.next_cursor ?? undefined;
    } while (cursor);
    expect(items.length).toBeGreaterThan(10);
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    const sorted = [...items].sort((a, b) =>
      a.sent_at < b.sent_at ? -1 : a.sent_at > b.sent_at ? 1 : a.id < b.id ? -1 : 1,
    );
    expect(items).toEqual(sorted);
  });
  it('4.13 rejects a window over 90×24 h and accepts exactly 90×24 h', async () => {
    const from = '2026-08-24T12:00:00Z';
    expect(
      (
        await api(h, 'GET', '/csat-surveys', {
          query: { sent_from: from, sent_before: '2026-11-22T12:00:00Z' },
        })
      ).status,
    ).toBe(200);
    const over = await api(h, 'GET', '/csat-surveys', {
      query: { sent_from: from, sent_before: '2026-11-22T12:00:00.001Z' },
    });
    expect(over.status).toBe(400);
  });
  it('4.13 rejects both pairs, half pairs, instants without offset and unknown parameters', async () => {
    const bad = [
      {
        sent_from: '2026-11-01T00:00:00Z',
        sent_before: '2026-11-02T00:00:00Z',
        submitted_from: '2026-11-01T00:00:00Z',
        submitted_before: '2026-11-02T00:00:00Z',
      },
      { sent_from: '2026-11-01T00:00:00Z' },
      {},
      { sent_from: '2026-11-01T00:00:00', sent_before: '2026-11-02T00:00:00Z' },
      { sent_from: '2026-11-02T00:00:00Z', sent_before: '2026-11-01T00:00:00Z' },
      { sent_from: '2026-11-01T00:00:00Z', sent_before: '2026-11-02T00:00:00Z', score_lte: 6 },
      { sent_from: '2026-11-01T00:00:00Z', sent_before: '2026-11-02T00:00:00Z', limit: 101 },
      { sent_from: '2026-11-01T00:00:00Z', sent_before: '2026-11-02T00:00:00Z', ticket_id: 'x' },
    ];
    for (const query of bad)
      expect((await api(h, 'GET', '/csat-surveys', { query })).status, JSON.stringify(query)).toBe(400);
  });
  it('4.13 agent_limited lacks dashboard.ticket_csat: 403 FORBIDDEN_SCOPE; legacy key has no linked agent: 403', async () => {
    const query = { sent_from: '2026-11-01T00:00:00Z', sent_before: '2026-11-02T00:00:00Z' };
    expect((await api(h, 'GET', '/csat-surveys', { key: h.keys.agent_limited, query })).status).toBe(403);
    expect((await api(h, 'GET', '/csat-surveys', { key: h.keys.legacy, query })).status).toBe(403);
  });
  it('2.7 a late answer is reported with its submitted_at in a submitted window', async () => {
    const s = h.world.surveys.find((x) => x.submittedAt === null && x.orgId === h.world.orgA.id);
    if (!s) throw new Error('no unanswered survey');
    h.world.answerSurvey(s.id, 2, 'late', NOW.getTime() - H);
    const r = await api(h, 'GET', '/csat-surveys', {
      query: {
        submitted_from: '2026-11-22T10:00:00Z',
        submitted_before: '2026-11-22T12:00:00Z',
        include_comments: 'true',
        limit: 100,
      },
    });
    const found = r.body.data.find((x: { id: string }) => x.id === s.id);
    expect(found?.score).toBe(2);
    expect(found?.comment).toBe('late');
  });
});

describe('4.14 GET /agent-sessions', () => {
  it('4.14 returns exactly the overlapping sessions of a window, unclipped, in (session_start, id) order', async () => {
    const from = '2026-11-10T00:00:00Z';
    const before = '2026-11-20T00:00:00Z';
    const ids: string[] = [];
    let cursor: string | undefined;
    do {
      const r = await api(h, 'GET', '/agent-sessions', {
        query: { from, before, limit: 100, ...(cursor ? { cursor } : {}) },
      });
      const page = exportEnvelope(AgentSession, AgentSessionMeta).parse(r.body);
      ids.push(...page.data.map((x) => x.id));
      cursor = page.pagination.next_cursor ?? undefined;
    } while (cursor);
    const w = { fromUs: Date.parse(from) * 1000, beforeUs: Date.parse(before) * 1000 };
    const expected = h.world.sessions
      .filter(
        (s) =>
          s.orgId === h.world.orgA.id && overlaps(s.start * 1000, s.end === null ? null : s.end * 1000, w),
      )
      .map((s) => s.id);
    expect(ids).toEqual(expected);
    expect(ids.length).toBeGreaterThan(20);
  });
  it('4.14 agent_limited lacks dashboard.other_agents_metrics even for its own id', async () => {
    const agentId = h.world.key('agent_limited').agentId as string;
    const r = await api(h, 'GET', '/agent-sessions', {
      key: h.keys.agent_limited,
      query: { from: '2026-11-10T00:00:00Z', before: '2026-11-11T00:00:00Z', agent_id: agentId },
    });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('FORBIDDEN_SCOPE');
  });
  it('4.14 overlap selection matches the rule for arbitrary intervals (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.option(fc.integer({ min: 0, max: 500 })),
        (f, len, start, dur) => {
          const w = { fromUs: f, beforeUs: f + len };
          const end = dur === null ? null : start + dur;
          const expected = start < w.beforeUs && (end === null || end > w.fromUs);
          expect(overlaps(start, end, w)).toBe(expected);
          if (end === w.fromUs) expect(overlaps(start, end, w)).toBe(false);
          if (start === w.beforeUs) expect(overlaps(start, end, w)).toBe(false);
        },
      ),
    );
  });
  it('4.14 rejects a missing before, a zero-length window and over 90×24 h', async () => {
    for (const query of [
      { from: '2026-11-10T00:00:00Z' },
      { from: '2026-11-10T00:00:00Z', before: '2026-11-10T00:00:00Z' },
      { from: '2026-08-01T00:00:00Z', before: '2026-10-30T00:00:00.001Z' },
    ]) {
      expect((await api(h, 'GET', '/agent-sessions', { query })).status).toBe(400);
    }
    expect(
      (
        await api(h, 'GET', '/agent-sessions', {
          query: { from: '2026-08-01T00:00:00Z', before: '2026-10-30T00:00:00Z' },
        })
      ).status,
    ).toBe(200);
  });
});

describe('8 rate limits', () => {
  it('8 a class over its limit gives 429 RATE_LIMIT_EXCEEDED with Retry-After and retry_after; other classes unaffected', async () => {
    const rl = await start({ rateLimits: true, rateLimitOverrides: { list: 2 }, tickets: 20 });
    try {
      const a = await api(rl, 'GET', '/tickets', { query: { limit: 1 } });
      expect(a.headers['x-ratelimit-limit']).toBe('2');
      expect(a.headers['x-ratelimit-remaining']).toBe('1');
      await api(rl, 'GET', '/views');
      const c = await api(rl, 'GET', '/tickets');
      expect(c.status).toBe(429);
      expect(c.body.code).toBe('RATE_LIMIT_EXCEEDED');
      expect(Number(c.headers['retry-after'])).toBeGreaterThan(0);
      expect(c.body.retry_after).toBeGreaterThan(0);
      expect((await api(rl, 'GET', '/tickets/1')).status).toBe(200);
      expect((await api(rl, 'GET', '/tickets', { key: rl.keys.readonly })).status).toBe(200);
    } finally {
      await rl.stop();
    }
  });
});

describe('9 legacy surface', () => {
  it('9.2 before the sunset legacy routes serve with Deprecation, Sunset and successor Link; after it 410', async () => {
    const old = await start({ tickets: 20, now: () => new Date('2026-10-01T00:00:00Z') });
    try {
      const r = await request(`${old.baseUrl}/public/tickets?page=1&page_size=5`, {
        headers: { 'cx-api-key': old.keys.legacy },
      });
      const body = (await r.body.json()) as { tickets: unknown[]; total_pages: number };
      expect(r.statusCode).toBe(200);
      expect(body.tickets).toHaveLength(5);
      expect(r.headers['deprecation']).toBe('true');
      expect(r.headers['sunset']).toBe('Sat, 31 Oct 2026 00:00:00 GMT');
      expect(String(r.headers['link'])).toContain('rel="successor-version"');
    } finally {
      await old.stop();
    }
    const gone = await request(`${h.baseUrl}/public/tickets/1`, { headers: { 'cx-api-key': h.keys.legacy } });
    await gone.body.text();
    expect(gone.statusCode).toBe(410);
    expect(String(gone.headers['link'])).toContain('/public/v1/tickets');
  });
});

describe('CLI contract', () => {
  it('prints one JSON line with base_url and the five keys, serves, and exits on SIGTERM', async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'companion/cli.ts',
        '--port',
        '0',
        '--seed',
        '7',
        '--tickets',
        '50',
        '--log-level',
        'silent',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const line = await new Promise<string>((resolve) =>
      createInterface({ input: child.stdout }).once('line', resolve),
    );
    const parsed = JSON.parse(line) as { base_url: string; keys: Record<string, string> };
    expect(parsed.base_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Object.keys(parsed.keys).sort()).toEqual([
      'admin',
      'agent_limited',
      'legacy',
      'other_org',
      'readonly',
    ]);
    const r = await request(`${parsed.base_url}/public/v1/health`);
    expect(r.statusCode).toBe(200);
    await r.body.text();
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
