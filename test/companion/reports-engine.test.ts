import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import { ErrorEnvelope } from '../../schemas/api/index.js';
import { MetricCatalogEntry, ReportResult } from '../../schemas/api/reports.js';
import { api, start } from './helpers.js';

/**
 * Spec 2.9–2.11, 4.11, 4.12, 5.8: the report engine over HTTP, checked against numbers recomputed
 * independently from the raw endpoints (GET /tickets, thread reads, the CSAT and session exports).
 * The companion clock is fixed so periods and DST changes are deterministic.
 */
const NOW = new Date('2025-04-15T10:00:00Z');
let h: CompanionHandle;

interface RawTicket {
  ticket_number: number;
  status: string;
  channel: string;
  created_at: string;
  team_id: string | null;
}
const tickets: RawTicket[] = [];

beforeAll(async () => {
  h = await start({ tickets: 300, now: () => NOW });
  let cursor: string | undefined;
  for (;;) {
    const r = await api(h, 'GET', '/tickets', { query: { limit: 100, ...(cursor ? { cursor } : {}) } });
    tickets.push(...(r.body.data as RawTicket[]));
    if (!r.body.pagination.has_more) break;
    cursor = r.body.pagination.next_cursor;
  }
});
afterAll(() => h.stop());

async function report(query: string[], timezone = 'UTC', key = h.keys.admin) {
  return api(h, 'POST', '/reports/query', { key, body: { query: query.join('\n'), timezone } });
}
async function data(query: string[], timezone = 'UTC') {
  const r = await report(query, timezone);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return ReportResult.parse(r.body.data);
}
async function kpi(metric: string, period: string, timezone = 'UTC', where: string[] = []) {
  const r = await data(
    ['FROM tickets', `SHOW ${metric}`, period, ...where, `VISUALIZE ${metric} TYPE kpi`],
    timezone,
  );
  if (r.kind !== 'kpi') throw new Error('not a kpi');
  return r;
}
const inRange = (iso: string, from: string, before: string) => {
  const t = Date.parse(iso);
  return t >= Date.parse(from) && t < Date.parse(before);
};
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};
async function crawl<T>(path: string, query: Record<string, string>): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const r = await api(h, 'GET', path, { query: { ...query, limit: 100, ...(cursor ? { cursor } : {}) } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    out.push(...(r.body.data as T[]));
    if (!r.body.pagination.has_more) return out;
    cursor = r.body.pagination.next_cursor;
  }
}

describe('4.11 GET /reports/metrics', () => {
  it('4.11/2.9 returns exactly 50 unique entries with every field of 2.9 and nothing else (List class)', async () => {
    const r = await api(h, 'GET', '/reports/metrics');
    expect(r.status).toBe(200);
    expect(r.headers['x-ratelimit-limit']).toBe('60');
    const entries = (r.body.data as unknown[]).map((e) => MetricCatalogEntry.strict().parse(e));
    expect(entries).toHaveLength(50);
    expect(new Set(entries.map((e) => e.id)).size).toBe(50);
    for (const e of entries) expect(e.snapshot).toBe(e.attribution === 'current_snapshot');
  });

  it('2.11 the defined metrics carry the aggregation, format and attribution of the table', async () => {
    const r = await api(h, 'GET', '/reports/metrics');
    const byId = new Map((r.body.data as Array<{ id: string }>).map((e) => [e.id, e]));
    const table: Array<[string, string, string, string]> = [
      ['new_tickets', 'count', 'count', 'ticket_created'],
      ['resolved_tickets', 'count', 'count', 'ticket_resolved'],
      ['tickets_replied_to', 'count', 'count', 'reply_event'],
      ['answered_tickets', 'count', 'count', 'reply_event'],
      ['reopened_tickets', 'count', 'count', 'reopen_event'],
      ['backlog_now', 'count', 'count', 'current_snapshot'],
      ['backlog_over_24h', 'count', 'count', 'current_snapshot'],
      ['backlog_over_48h', 'count', 'count', 'current_snapshot'],
      ['awaiting_response_now', 'count', 'count', 'current_snapshot'],
      ['net_backlog_change', 'sum', 'count', 'mixed_events'],
      ['messages', 'sum', 'count', 'ticket_created'],
    ];
    for (const [id, aggregation, format, attribution] of table) {
      expect(byId.get(id)).toMatchObject({ aggregation, format, attribution });
    }
    expect(byId.get('customer_first_response_time')).toMatchObject({
      aggregation: 'median',
      format: 'duration-seconds',
    });
    expect(byId.get('human_first_response_time')).toMatchObject({
      aggregation: 'median',
      format: 'duration-seconds',
    });
    expect(byId.get('csat_average')).toMatchObject({ format: 'decimal' });
    expect(byId.get('csat_response_rate')).toMatchObject({
      format: 'percent',
      attribution: 'survey_submitted',
    });
    expect(byId.get('money_saved')).toMatchObject({ format: 'currency-eur' });
    expect(byId.get('ai_spend')).toMatchObject({ format: 'currency-eur' });
    for (const id of [
      'messages_per_ticket',
      'agent_messages',
      'full_resolution_time',
      'csat_responses',
      'low_csat_tickets',
      'time_saved',
      'agent_online_time',
    ]) {
      expect(byId.has(id), id).toBe(true);
    }
  });

  it('2.9 the catalog holds no workspace entity ids or internal source names', async () => {
    const text = JSON.stringify((await api(h, 'GET', '/reports/metrics')).body.data);
    const w = h.world;
    for (const id of [
      ...w.orgs.map((o) => o.id),
      ...w.agents.map((a) => a.id),
      ...w.teams.map((t) => t.id),
    ]) {
      expect(text.includes(id), id).toBe(false);
    }
    expect(text).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
    expect(text).not.toMatch(/automationRuns|messageIdxs|replicaShadow|ticketIdx|world/);
  });
});

describe('4.12 POST /reports/query: body and errors', () => {
  const Q = ['FROM tickets', 'SHOW new_tickets', 'DURING last_week', 'VISUALIZE new_tickets TYPE kpi'];
  it('4.12 the body is exactly {query, timezone}; an unknown field or missing timezone is 400', async () => {
    const extra = await api(h, 'POST', '/reports/query', {
      body: { query: Q.join('\n'), timezone: 'UTC', limit: 5 },
    });
    expect(extra.status).toBe(400);
    expect(ErrorEnvelope.parse(extra.body).code).toBe('VALIDATION_ERROR');
    const missing = await api(h, 'POST', '/reports/query', { body: { query: Q.join('\n') } });
    expect(missing.status).toBe(400);
    const fine = await report(Q);
    expect(fine.status).toBe(200);
    expect(fine.headers['x-ratelimit-limit']).toBe('10');
  });

  it('4.12/8 an invalid IANA timezone is 400 VALIDATION_ERROR', async () => {
    const r = await report(Q, 'Europe/Atlantis');
    expect(r.status).toBe(400);
    expect(r.body.message).toContain('Europe/Atlantis');
  });

  it('7 a query error is 400 VALIDATION_ERROR whose message names the line', async () => {
    const r = await report([
      'FROM tickets',
      'SHOW new_tickets',
      'DURING last_week',
      'LIMIT 1001',
      'VISUALIZE new_tickets TYPE kpi',
    ]);
    expect(r.status).toBe(400);
    expect(ErrorEnvelope.parse(r.body)).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(r.body.message).toMatch(/^line 4: /);
  });
});

describe('2.11 values recomputed from the raw endpoints', () => {
  it('2.11 new_tickets over SINCE … UNTIL equals tickets created in the range (end date inclusive, in the zone)', async () => {
    const cases: Array<[string, string, string]> = [
      ['UTC', '2025-02-01T00:00:00Z', '2025-03-01T00:00:00Z'],
      ['America/New_York', '2025-02-01T05:00:00Z', '2025-03-01T05:00:00Z'],
      ['Asia/Tokyo', '2025-01-31T15:00:00Z', '2025-02-28T15:00:00Z'],
    ];
    for (const [tz, from, before] of cases) {
      const r = await kpi('new_tickets', 'SINCE 2025-02-01 UNTIL 2025-02-28', tz);
      const expected = tickets.filter((t) => inRange(t.created_at, from, before)).length;
      expect(r.value, tz).toBe(expected);
      expect(expected).toBeGreaterThan(0);
    }
  });

  it('2.10 GROUP BY channel gives per-channel counts with returned keys and labels; ORDER BY and LIMIT apply', async () => {
    const r = await data([
      'FROM tickets',
      'SHOW new_tickets',
      'SINCE 2025-01-01 UNTIL 2025-03-31',
      'GROUP BY channel',
      'VISUALIZE new_tickets TYPE horizontal_bar',
    ]);
    if (r.kind !== 'category') throw new Error('category expected');
    const counts = new Map<string, number>();
    for (const t of tickets)
      if (inRange(t.created_at, '2025-01-01T00:00:00Z', '2025-04-01T00:00:00Z'))
        counts.set(t.channel, (counts.get(t.channel) ?? 0) + 1);
    expect(Object.fromEntries(r.items.map((i) => [i.key, i.value]))).toEqual(Object.fromEntries(counts));
    expect(r.items.map((i) => i.value)).toEqual([...r.items.map((i) => i.value)].sort((a, b) => b - a));
    expect(r.items.find((i) => i.key === 'widget')?.label).toBe('Chat widget');
    const top = await data([
      'FROM tickets',
      'SHOW new_tickets',
      'SINCE 2025-01-01 UNTIL 2025-03-31',
      'GROUP BY channel',
      'ORDER BY label ASC',
      'LIMIT 2',
      'VISUALIZE new_tickets TYPE data_table',
    ]);
    if (top.kind !== 'data_table') throw new Error('table expected');
    const labels = r.items.map((i) => i.label).sort((a, b) => a.localeCompare(b, 'en'));
    expect(top.rows.map((x) => x.label)).toEqual(labels.slice(0, 2));
    expect(top.rowDimension).toBe('channel');
  });

  it('2.11 backlog_now and backlog_over_24h equal open tickets from GET /tickets now', async () => {
    const open = tickets.filter((t) => t.status === 'open' || t.status === 'need_more_info');
    expect((await kpi('backlog_now', 'DURING today')).value).toBe(open.length);
    const old = open.filter((t) => Date.parse(t.created_at) < NOW.getTime() - 24 * 3_600_000);
    expect((await kpi('backlog_over_24h', 'DURING today')).value).toBe(old.length);
    const waiting = tickets.filter((t) => t.status === 'need_more_info');
    expect((await kpi('awaiting_response_now', 'DURING yesterday')).value).toBe(waiting.length);
    expect(open.length).toBeGreaterThan(old.length);
  });

  it('2.11 csat_responses and csat_average equal scored surveys submitted in the range from the CSAT export', async () => {
    const from = '2025-01-15T00:00:00Z';
    const before = '2025-04-01T00:00:00Z';
    const rows = await crawl<{ score: number | null; credited_agent_id: string | null }>('/csat-surveys', {
      submitted_from: from,
      submitted_before: before,
    });
    const scored = rows.filter((s) => s.score !== null);
    expect(scored.length).toBeGreaterThan(5);
    const period = 'SINCE 2025-01-15 UNTIL 2025-03-31';
    expect((await kpi('csat_responses', period)).value).toBe(scored.length);
    const mean = scored.reduce((a, s) => a + (s.score as number), 0) / scored.length;
    expect((await kpi('csat_average', period)).value).toBeCloseTo(mean, 5);
    const low = scored.filter((s) => (s.score as number) <= 2).length;
    expect((await kpi('low_csat_tickets', period)).value).toBe(low);
    // Per credited agent (2.7: the stored credit), as a data table.
    const t = await data([
      'FROM tickets',
      'SHOW csat_responses',
      period,
      'GROUP BY human_agent',
      'VISUALIZE csat_responses TYPE data_table',
    ]);
    if (t.kind !== 'data_table') throw new Error('table expected');
    const perAgent = new Map<string, number>();
    for (const s of scored)
      perAgent.set(s.credited_agent_id ?? 'none', (perAgent.get(s.credited_agent_id ?? 'none') ?? 0) + 1);
    expect(Object.fromEntries(t.rows.map((r) => [r.key, r.values.csat_responses]))).toEqual(
      Object.fromEntries(perAgent),
    );
  });

  it('2.11 csat_response_rate is scored submissions over surveys sent in the period, dated by sent date', async () => {
    const rows = await crawl<{ score: number | null; submitted_at: string | null }>('/csat-surveys', {
      sent_from: '2025-02-01T00:00:00Z',
      sent_before: '2025-03-01T00:00:00Z',
    });
    const answered = rows.filter((s) => s.submitted_at !== null && s.score !== null).length;
    const r = await kpi('csat_response_rate', 'SINCE 2025-02-01 UNTIL 2025-02-28');
    expect(r.value).toBeCloseTo((100 * answered) / rows.length, 5);
    expect(r.value).toBeGreaterThan(1); // percentage points, not a fraction
  });

  it('2.11 customer_first_response_time is the median of raw thread durations dated by the reply', async () => {
    const since = '2025-01-01T00:00:00Z';
    const before = '2025-04-01T00:00:00Z';
    const any: number[] = [];
    const human: number[] = [];
    for (const t of tickets) {
      if (Date.parse(t.created_at) >= Date.parse(before)) continue;
      const r = await api(h, 'GET', `/tickets/${t.ticket_number}/messages`);
      const msgs = (r.body.data as Array<{ role: string; created_at: string }>).map((m) => ({
        role: m.role,
        at: Date.parse(m.created_at),
      }));
      const first = msgs.find((m) => m.role === 'customer');
      if (!first) continue;
      const reply = msgs.find((m) => m.role !== 'customer' && m.at >= first.at);
      if (reply && reply.at >= Date.parse(since) && reply.at < Date.parse(before))
        any.push((reply.at - first.at) / 1000);
      const hum = msgs.find((m) => m.role === 'agent' && m.at >= first.at);
      if (hum && hum.at >= Date.parse(since) && hum.at < Date.parse(before))
        human.push((hum.at - first.at) / 1000);
    }
    expect(any.length).toBeGreaterThan(10);
    const period = 'SINCE 2025-01-01 UNTIL 2025-03-31';
    expect((await kpi('customer_first_response_time', period)).value).toBeCloseTo(median(any), 3);
    expect((await kpi('human_first_response_time', period)).value).toBeCloseTo(median(human), 3);
    const mean = any.reduce((a, b) => a + b, 0) / any.length;
    expect((await kpi('average_first_response_time', period)).value).toBeCloseTo(mean, 3);
  });

  it('2.11 agent_online_time is deduplicated, period-clipped session time from the session export', async () => {
    const from = '2025-04-07T00:00:00Z';
    const before = '2025-04-14T00:00:00Z';
    const rows = await crawl<{
      agent_id: string;
      session_start: string;
      session_end: string | null;
      last_activity: string;
    }>('/agent-sessions', { from, before });
    const byAgent = new Map<string, Array<[number, number]>>();
    for (const s of rows) {
      const list = byAgent.get(s.agent_id) ?? [];
      list.push([Date.parse(s.session_start), Date.parse(s.session_end ?? s.last_activity)]);
      byAgent.set(s.agent_id, list);
    }
    let total = 0;
    const [a0, b0] = [Date.parse(from), Date.parse(before)];
    for (const list of byAgent.values()) {
      list.sort((x, y) => x[0] - y[0]);
      let cur: [number, number] | null = null;
      const merged: Array<[number, number]> = [];
      for (const iv of list) {
        if (cur && iv[0] <= cur[1]) cur[1] = Math.max(cur[1], iv[1]);
        else {
          cur = [iv[0], iv[1]];
          merged.push(cur);
        }
      }
      for (const [s, e] of merged) total += Math.max(0, Math.min(e, b0) - Math.max(s, a0)) / 1000;
    }
    expect(total).toBeGreaterThan(0);
    expect((await kpi('agent_online_time', 'DURING last_week')).value).toBeCloseTo(total, 3);
  });

  it('2.11 net_backlog_change equals new_tickets minus resolved_tickets', async () => {
    const p = 'DURING last_month';
    const net = (await kpi('net_backlog_change', p)).value;
    expect(net).toBe((await kpi('new_tickets', p)).value - (await kpi('resolved_tickets', p)).value);
  });
});

describe('2.10 comparisons', () => {
  it('2.10 rule 2: a historical KPI carries previousValue = the previous period queried directly', async () => {
    const r = await kpi('new_tickets', 'DURING last_month');
    const feb = await kpi('new_tickets', 'SINCE 2025-02-01 UNTIL 2025-02-28');
    expect(r.previousValue).toBe(feb.value);
    const yearAgo = await data([
      'FROM tickets',
      'SHOW new_tickets',
      'DURING this_week',
      'COMPARE TO previous_year',
      'VISUALIZE new_tickets TYPE kpi',
    ]);
    expect(yearAgo.kind === 'kpi' && yearAgo.previousValue).toBe(0); // the world's history starts 180 days ago
  });

  it('2.10 rule 1: COMPARE TO adds __compare series holding the previous period point by point', async () => {
    const r = await data([
      'FROM tickets',
      'SHOW new_tickets',
      'SINCE 2025-03-01 UNTIL 2025-03-10',
      'TIMESERIES day',
      'COMPARE TO previous_period',
      'VISUALIZE new_tickets TYPE line',
    ]);
    const prev = await data([
      'FROM tickets',
      'SHOW new_tickets',
      'SINCE 2025-02-19 UNTIL 2025-02-28',
      'TIMESERIES day',
      'VISUALIZE new_tickets TYPE line',
    ]);
    if (r.kind !== 'time-series' || prev.kind !== 'time-series') throw new Error('series expected');
    expect(r.series.map((s) => s.key)).toEqual(['new_tickets', 'new_tickets__compare']);
    expect(r.points.map((p) => p.values.new_tickets__compare)).toEqual(
      prev.points.map((p) => p.values.new_tickets),
    );
    expect(r.points.reduce((a, p) => a + (p.values.new_tickets ?? 0), 0)).toBe(
      (await kpi('new_tickets', 'SINCE 2025-03-01 UNTIL 2025-03-10')).value,
    );
  });
});

describe('2.11/8 time zones across DST (Europe/Berlin)', () => {
  const hours = async (day: string) => {
    const r = await data(
      [
        'FROM tickets',
        'SHOW new_tickets',
        `SINCE ${day} UNTIL ${day}`,
        'TIMESERIES hour',
        'VISUALIZE new_tickets TYPE line',
      ],
      'Europe/Berlin',
    );
    if (r.kind !== 'time-series') throw new Error('series expected');
    return r;
  };
  it('8 the spring-forward day has 23 hourly points and the fall-back day 25', async () => {
    const spring = await hours('2025-03-30');
    expect(spring.points).toHaveLength(23);
    expect(spring.points[0]?.date).toBe('2025-03-30T00:00:00+01:00');
    expect(spring.points[2]?.date).toBe('2025-03-30T03:00:00+02:00');
    const fall = await hours('2024-10-27');
    expect(fall.points).toHaveLength(25);
    expect(fall.points.filter((p) => p.date.startsWith('2024-10-27T02:00:00')).map((p) => p.date)).toEqual([
      '2024-10-27T02:00:00+02:00',
      '2024-10-27T02:00:00+01:00',
    ]);
  });

  it('8 daily buckets follow Berlin midnights across the change, matching tickets created between them', async () => {
    const r = await data(
      [
        'FROM tickets',
        'SHOW new_tickets',
        'SINCE 2025-03-29 UNTIL 2025-03-31',
        'TIMESERIES day',
        'VISUALIZE new_tickets TYPE data_table',
      ],
      'Europe/Berlin',
    );
    if (r.kind !== 'data_table') throw new Error('table expected');
    expect(r.rows.map((x) => x.key)).toEqual([
      '2025-03-29T00:00:00+01:00',
      '2025-03-30T00:00:00+01:00',
      '2025-03-31T00:00:00+02:00',
    ]);
    const bounds = [
      '2025-03-28T23:00:00Z',
      '2025-03-29T23:00:00Z',
      '2025-03-30T22:00:00Z',
      '2025-03-31T22:00:00Z',
    ];
    const expected = [0, 1, 2].map(
      (k) =>
        tickets.filter((t) => inRange(t.created_at, bounds[k] as string, bounds[k + 1] as string)).length,
    );
    expect(r.rows.map((x) => x.values.new_tickets)).toEqual(expected);
    const hourly = await hours('2025-03-30');
    expect(hourly.points.reduce((a, p) => a + (p.values.new_tickets ?? 0), 0)).toBe(expected[1]);
  });
});

describe('4.12/5.8 permissions and restrictions', () => {
  const Q = ['FROM tickets', 'SHOW new_tickets', 'DURING last_month', 'VISUALIZE new_tickets TYPE kpi'];
  it('5.5 a key without analytics:read gets 403 FORBIDDEN_SCOPE on both routes', async () => {
    const q = await report(Q, 'UTC', h.keys.readonly);
    expect(q.status).toBe(403);
    expect(q.body.code).toBe('FORBIDDEN_SCOPE');
    expect((await api(h, 'GET', '/reports/metrics', { key: h.keys.readonly })).status).toBe(403);
  });

  it('5.8 a legacy full-access key without a linked agent gets 403 FORBIDDEN_SCOPE', async () => {
    const r = await report(Q, 'UTC', h.keys.legacy);
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('FORBIDDEN_SCOPE');
  });

  it('4.12 the limited agent lacks CSAT, automation and other-agent permissions: 403 naming the permission', async () => {
    const k = h.keys.agent_limited;
    const csat = await report(
      ['FROM tickets', 'SHOW csat_average', 'DURING last_month', 'VISUALIZE csat_average TYPE kpi'],
      'UTC',
      k,
    );
    expect(csat.status).toBe(403);
    expect(csat.body.message).toContain('dashboard.ticket_csat');
    const auto = await report(
      ['FROM tickets', 'SHOW time_saved', 'DURING last_month', 'VISUALIZE time_saved TYPE kpi'],
      'UTC',
      k,
    );
    expect(auto.status).toBe(403);
    const agents = await report(
      [
        'FROM tickets',
        'SHOW new_tickets',
        'DURING last_month',
        'GROUP BY human_agent',
        'VISUALIZE new_tickets TYPE data_table',
      ],
      'UTC',
      k,
    );
    expect(agents.status).toBe(403);
    expect(agents.body.message).toContain('dashboard.other_agents_metrics');
  });

  it('4.12 a restricted agent sees only its teams and channels', async () => {
    const limited = h.world.agent(h.world.key('agent_limited').agentId as string);
    const team = limited?.restrictions.teamIds?.[0] as string;
    const channels = limited?.restrictions.channels ?? [];
    const r = await report(Q, 'UTC', h.keys.agent_limited);
    expect(r.status).toBe(200);
    const mine = r.body.data.value as number;
    const expected = tickets.filter(
      (t) =>
        inRange(t.created_at, '2025-03-01T00:00:00Z', '2025-04-01T00:00:00Z') &&
        t.team_id === team &&
        channels.includes(t.channel as never),
    ).length;
    expect(mine).toBe(expected);
    const all = await kpi('new_tickets', 'DURING last_month');
    expect(mine).toBeLessThan(all.value);
  });

  it('5.3 a key of another org sees only that org', async () => {
    const r = await report(
      [
        'FROM tickets',
        'SHOW new_tickets',
        'SINCE 2024-01-01 UNTIL 2024-12-31',
        'VISUALIZE new_tickets TYPE kpi',
      ],
      'UTC',
      h.keys.other_org,
    );
    expect(r.status).toBe(200);
    const orgB = h.world.tickets.filter(
      (t) => t.orgId === h.world.orgB.id && t.createdAt < Date.parse('2025-01-01T00:00:00Z'),
    ).length;
    expect(r.body.data.value).toBe(orgB);
  });
});

describe('2.11 visibility', () => {
  it('2.11 a deleted ticket leaves the creation cohort', async () => {
    const victim = tickets.find((t) =>
      inRange(t.created_at, '2025-03-01T00:00:00Z', '2025-04-01T00:00:00Z'),
    ) as RawTicket;
    const before = (await kpi('new_tickets', 'DURING last_month')).value;
    h.world.deleteTicket(victim.ticket_number);
    expect((await kpi('new_tickets', 'DURING last_month')).value).toBe(before - 1);
  });
});
