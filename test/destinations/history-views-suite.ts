import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeBusinessCalendar } from '../../activities/business-hours/write.js';
import type { Destination } from '../../connectors/destination.js';
import type { AgentSession, Ticket } from '../../schemas/api/index.js';
import { BusinessHoursFile } from '../../schemas/business-hours.js';
import { input, message, survey, ticket, writeBatch } from './fixtures.js';
import type { ViewsHarness } from './views-suite.js';

/**
 * The views over the sweeps' sightings (schemas/ticket-history-views.ts) on a hand-built warehouse: one
 * ticket seen in five sweeps (first sighting, a resolution pinned by resolved_at, a sighting with nothing
 * tracked changed, a reopen with a handoff, a tag change the source did not stamp), one seen first as
 * created, one first seen resolved; and an agent's overlapping sessions across midnight.
 */

const H1 = '20000000-0000-4000-8000-000000000001';
const H2 = '20000000-0000-4000-8000-000000000002';
const H3 = '20000000-0000-4000-8000-000000000003';

const h1 = (over: Partial<Ticket>) =>
  ticket({
    id: H1,
    ticket_number: 101,
    created_at: '2025-03-01T10:00:00Z',
    assignee_id: 'agt_1',
    tags: ['a'],
    ...over,
  });

/** Sightings in the order the sweeps made them. */
const sightings: { t: Ticket; observed_at: string; first_seen: boolean }[] = [
  {
    t: h1({ status: 'open', updated_at: '2025-03-01T11:00:00Z' }),
    observed_at: '2025-03-01T12:00:00Z',
    first_seen: true,
  },
  {
    t: h1({ status: 'resolved', updated_at: '2025-03-02T09:30:00Z', resolved_at: '2025-03-02T09:00:00Z' }),
    observed_at: '2025-03-02T12:00:00Z',
    first_seen: false,
  },
  // A message moved updated_at; nothing tracked changed: no new interval.
  {
    t: h1({ status: 'resolved', updated_at: '2025-03-02T15:00:00Z', resolved_at: '2025-03-02T09:00:00Z' }),
    observed_at: '2025-03-03T00:00:00Z',
    first_seen: false,
  },
  {
    t: h1({ status: 'open', updated_at: '2025-03-03T08:00:00Z', assignee_id: 'agt_2' }),
    observed_at: '2025-03-03T12:00:00Z',
    first_seen: false,
  },
  // Tags changed without updated_at moving: dated by the sweep.
  {
    t: h1({ status: 'open', updated_at: '2025-03-03T08:00:00Z', assignee_id: 'agt_2', tags: ['a', 'b'] }),
    observed_at: '2025-03-04T12:00:00Z',
    first_seen: false,
  },
  {
    t: ticket({
      id: H2,
      ticket_number: 102,
      created_at: '2025-03-02T00:00:00Z',
      updated_at: '2025-03-02T00:00:00Z',
    }),
    observed_at: '2025-03-02T12:00:00Z',
    first_seen: true,
  },
  {
    t: ticket({
      id: H3,
      ticket_number: 103,
      status: 'resolved',
      created_at: '2025-02-28T00:00:00Z',
      updated_at: '2025-03-01T05:00:00Z',
      resolved_at: '2025-03-01T04:00:00Z',
    }),
    observed_at: '2025-03-01T12:00:00Z',
    first_seen: true,
  },
];

const session = (id: string, start: string, end: string | null, last: string): AgentSession => ({
  id,
  agent_id: 'agt_1',
  session_start: start,
  session_end: end,
  last_activity: last,
  updated_at: last,
});

const sessions = [
  session(
    '30000000-0000-4000-8000-000000000001',
    '2025-03-01T22:00:00Z',
    '2025-03-02T02:00:00Z',
    '2025-03-02T02:00:00Z',
  ),
  // Overlaps the first: its second hour counts once.
  session(
    '30000000-0000-4000-8000-000000000002',
    '2025-03-02T01:00:00Z',
    '2025-03-02T03:00:00Z',
    '2025-03-02T03:00:00Z',
  ),
  // No end: counts up to its last activity, never beyond (spec 2.8 rule 3).
  session('30000000-0000-4000-8000-000000000003', '2025-03-02T10:00:00Z', null, '2025-03-02T10:30:00Z'),
];

/** H1's thread: two customer turns answered (by AI, then a human), a third waiting. */
const thread = [
  ['customer', '2025-03-01T10:00:00Z'],
  ['customer', '2025-03-01T10:10:00Z'],
  ['ai', '2025-03-01T10:30:00Z'],
  ['customer', '2025-03-02T08:00:00Z'],
  ['agent', '2025-03-02T08:45:00Z'],
  ['customer', '2025-03-03T07:00:00Z'],
].map(([role, created_at]) =>
  message({ ticket_id: H1, ticket_number: 101, role: role!, created_at: created_at! }),
);

/** H3's answers: 2, then 5. */
const answers = [
  survey({ ticket_id: H3, ticket_number: 103, score: 2, submitted_at: '2025-03-01T06:00:00Z' }),
  survey({ ticket_id: H3, ticket_number: 103, score: 5, submitted_at: '2025-03-02T06:00:00Z' }),
  survey({ ticket_id: H3, ticket_number: 103 }),
];

const iso = (v: unknown) => (v === null || v === undefined ? null : new Date(String(v)).toISOString());

export function historyViewsSuite(name: string, makeHarness: () => Promise<ViewsHarness>) {
  describe(`ticket history views — ${name}`, () => {
    let h: ViewsHarness;
    let dest: Destination;
    beforeAll(async () => {
      h = await makeHarness();
      dest = await h.create();
      await dest.prepare();
      // The tickets as the last sweep left them, each batch with its sightings (as the sweep writes them).
      const latest = new Map(sightings.map((s) => [s.t.id, s.t]));
      await dest.writeTables([
        { table: 'tickets', rows: [...latest.values()].map(input) },
        {
          table: 'ticket_observations',
          rows: sightings.map((s) => ({
            ticket: s.t,
            observed_at: s.observed_at,
            first_seen: s.first_seen,
            repair: false,
          })),
        },
      ]);
      await writeBatch(dest, { table: 'agent_sessions', rows: sessions.map(input) });
      await writeBatch(dest, { table: 'ticket_messages', rows: thread.map(input) });
      await writeBatch(dest, { table: 'csat_surveys', rows: answers.map(input) });
    }, 600_000);
    afterAll(async () => {
      await dest?.close();
      await h?.teardown();
    });

    it('ticket_history: one interval per state, its start and how it is known', async () => {
      const rows = await dest.select(
        (
          d,
        ) => `SELECT ticket_id, valid_from, valid_to, valid_from_precision, changed_after, status, assignee_id,
          previous_status, is_reopen, is_resolution, is_handoff FROM ${d.table('ticket_history')}
          ORDER BY ticket_id, valid_from`,
      );
      const out = rows.map((r) => ({
        ...r,
        valid_from: iso(r['valid_from']),
        valid_to: iso(r['valid_to']),
        changed_after: iso(r['changed_after']),
      }));
      const base = { is_reopen: false, is_resolution: false, is_handoff: false };
      expect(out).toEqual([
        {
          ...base,
          ticket_id: H1,
          valid_from: '2025-03-01T11:00:00.000Z',
          valid_to: '2025-03-02T09:00:00.000Z',
          valid_from_precision: 'first_seen',
          changed_after: null,
          status: 'open',
          assignee_id: 'agt_1',
          previous_status: null,
        },
        {
          ...base,
          ticket_id: H1,
          valid_from: '2025-03-02T09:00:00.000Z',
          valid_to: '2025-03-03T08:00:00.000Z',
          valid_from_precision: 'resolved_at',
          changed_after: '2025-03-01T11:00:00.000Z',
          status: 'resolved',
          assignee_id: 'agt_1',
          previous_status: 'open',
          is_resolution: true,
        },
        {
          ...base,
          ticket_id: H1,
          valid_from: '2025-03-03T08:00:00.000Z',
          valid_to: '2025-03-04T12:00:00.000Z',
          valid_from_precision: 'updated_at',
          changed_after: '2025-03-02T15:00:00.000Z',
          status: 'open',
          assignee_id: 'agt_2',
          previous_status: 'resolved',
          is_reopen: true,
          is_handoff: true,
        },
        {
          ...base,
          ticket_id: H1,
          valid_from: '2025-03-04T12:00:00.000Z',
          valid_to: null,
          valid_from_precision: 'sweep',
          changed_after: '2025-03-03T12:00:00.000Z',
          status: 'open',
          assignee_id: 'agt_2',
          previous_status: 'open',
        },
        {
          ...base,
          ticket_id: H2,
          valid_from: '2025-03-02T00:00:00.000Z',
          valid_to: null,
          valid_from_precision: 'created',
          changed_after: null,
          status: 'open',
          assignee_id: 'agent_12',
          previous_status: null,
        },
        {
          ...base,
          ticket_id: H3,
          valid_from: '2025-03-01T05:00:00.000Z',
          valid_to: null,
          valid_from_precision: 'first_seen',
          changed_after: null,
          status: 'resolved',
          assignee_id: 'agent_12',
          previous_status: null,
        },
      ]);
    });

    it('ticket_resolutions and ticket_facts.reopen_count follow the history', async () => {
      const res = await dest.select(
        (d) =>
          `SELECT ticket_id, resolved_at, source FROM ${d.table('ticket_resolutions')} ORDER BY ticket_id`,
      );
      expect(res.map((r) => ({ ...r, resolved_at: iso(r['resolved_at']) }))).toEqual([
        { ticket_id: H1, resolved_at: '2025-03-02T09:00:00.000Z', source: 'history' },
        { ticket_id: H3, resolved_at: '2025-03-01T04:00:00.000Z', source: 'current' },
      ]);
      const facts = await dest.select(
        (d) => `SELECT ticket_id, reopen_count FROM ${d.table('ticket_facts')} ORDER BY ticket_id`,
      );
      expect(facts.map((r) => [r['ticket_id'], Number(r['reopen_count'])])).toEqual([
        [H1, 1],
        [H2, 0],
        [H3, 0],
      ]);
    });

    it('ticket_metrics: replies and waits from the thread, resolutions, reopens and handoffs from the history', async () => {
      const rows = await dest.select((d) => `SELECT * FROM ${d.table('ticket_metrics')} ORDER BY ticket_id`);
      const byId = new Map(rows.map((r) => [r['ticket_id'], r]));
      const m1 = byId.get(H1)!;
      const numbers = (r: Record<string, unknown>, keys: string[]) =>
        Object.fromEntries(keys.map((k) => [k, r[k] === null ? null : Number(r[k])]));
      expect(
        numbers(m1, [
          'first_reply_seconds',
          'first_human_reply_seconds',
          'reply_count',
          'total_reply_seconds',
          'first_resolution_seconds',
          'final_resolution_seconds',
          'resolutions',
          'reopens',
          'handoffs',
          'assignees',
        ]),
      ).toEqual({
        first_reply_seconds: 1800,
        first_human_reply_seconds: 22 * 3600 + 45 * 60,
        reply_count: 2,
        total_reply_seconds: 1800 + 2700,
        first_resolution_seconds: 23 * 3600,
        final_resolution_seconds: null,
        resolutions: 1,
        reopens: 1,
        handoffs: 1,
        assignees: 2,
      });
      expect(iso(m1['awaiting_reply_since'])).toBe('2025-03-03T07:00:00.000Z');
      // Still waiting: the wait grows with the clock.
      const waitingSince = (Date.now() - Date.parse('2025-03-03T07:00:00Z')) / 1000;
      expect(Number(m1['requester_wait_seconds'])).toBeGreaterThan(4500 + waitingSince - 600);
      expect(Number(m1['unsolved_age_seconds'])).toBeGreaterThan(waitingSince);
      expect(m1).toMatchObject({
        is_one_touch: false,
        is_two_touch: false,
        last_public_message_role: 'customer',
        history_complete: false,
      });
      expect(iso(m1['history_since'])).toBe('2025-03-01T11:00:00.000Z');
      const m3 = byId.get(H3)!;
      expect(
        numbers(m3, ['reply_count', 'final_resolution_seconds', 'resolutions', 'unsolved_age_seconds']),
      ).toEqual({
        reply_count: 0,
        final_resolution_seconds: 28 * 3600,
        resolutions: 1,
        unsolved_age_seconds: null,
      });
      expect(byId.get(H2)).toMatchObject({ history_complete: true, reopens: expect.anything() });
    });

    it('ticket_csat: first and latest answer, score changes', async () => {
      const rows = await dest.select(
        (d) =>
          `SELECT ticket_id, responses, first_score, latest_score, score_changes, average_score FROM ${d.table('ticket_csat')}`,
      );
      expect(
        rows.map((r) =>
          Object.fromEntries(Object.entries(r).map(([k, v]) => [k, k === 'ticket_id' ? v : Number(v)])),
        ),
      ).toEqual([
        {
          ticket_id: H3,
          responses: 2,
          first_score: 2,
          latest_score: 5,
          score_changes: 1,
          average_score: 3.5,
        },
      ]);
    });

    it('ticket_daily_backlog: open tickets at the end of each UTC day', async () => {
      const rows = await dest.select(
        (d) => `SELECT day, open_tickets, open_over_24h, complete FROM ${d.table('ticket_daily_backlog')}
          WHERE day <= '2025-03-05' ORDER BY day`,
      );
      expect(
        rows.map((r) => [r['day'], Number(r['open_tickets']), Number(r['open_over_24h']), r['complete']]),
      ).toEqual([
        ['2025-03-01', 1, 0, true],
        ['2025-03-02', 1, 0, true],
        ['2025-03-03', 2, 2, true],
        ['2025-03-04', 2, 2, true],
        ['2025-03-05', 2, 2, true],
      ]);
    });

    it('agent_online_daily: clipped to the day, overlaps once, an open session up to its last activity', async () => {
      const rows = await dest.select(
        (d) =>
          `SELECT agent_id, day, online_seconds, sessions FROM ${d.table('agent_online_daily')} ORDER BY day`,
      );
      expect(
        rows.map((r) => [r['agent_id'], r['day'], Number(r['online_seconds']), Number(r['sessions'])]),
      ).toEqual([
        ['agt_1', '2025-03-01', 7200, 1],
        ['agt_1', '2025-03-02', 3 * 3600 + 1800, 3],
      ]);
    });

    describe('business hours and targets (business_calendar, sla_targets)', () => {
      const B1 = '40000000-0000-4000-8000-000000000001';
      const B2 = '40000000-0000-4000-8000-000000000002';
      const B3 = '40000000-0000-4000-8000-000000000003';
      const business = [
        'first_reply_business_seconds',
        'full_resolution_business_seconds',
        'first_reply_breached',
        'resolution_breached',
      ];
      const metrics = async () => {
        const rows = await dest.select(
          (d) =>
            `SELECT ticket_id, ${business.join(', ')} FROM ${d.table('ticket_metrics')} ORDER BY ticket_id`,
        );
        return new Map(
          rows.map((r) => [
            String(r['ticket_id']),
            Object.fromEntries(
              business.map((k) => [k, typeof r[k] === 'boolean' || r[k] === null ? r[k] : Number(r[k])]),
            ),
          ]),
        );
      };
      const allNull = Object.fromEntries(business.map((k) => [k, null]));
      /** Mon–Fri 09:00–17:00 Berlin; Sunday 01:00–05:00 (the night of the spring DST change: 3 real hours). */
      const berlin = (sunday: boolean) =>
        BusinessHoursFile.parse({
          timezone: 'Europe/Berlin',
          hours: {
            monday: ['09:00-17:00'],
            tuesday: ['09:00-17:00'],
            wednesday: ['09:00-17:00'],
            thursday: ['09:00-17:00'],
            friday: ['09:00-17:00'],
            ...(sunday ? { sunday: ['01:00-05:00'] } : {}),
          },
          holidays: ['2025-04-01'],
          targets: {
            urgent: { first_reply: 'PT1H', resolution: 'P1D' },
            high: { first_reply: 'PT4H', resolution: 'PT16H' },
          },
        });

      beforeAll(async () => {
        // Friday 2025-03-28 (CET) to Wednesday 2025-04-02 (CEST), across the weekend, the DST change and a holiday.
        const tickets = [
          ticket({
            id: B1,
            ticket_number: 201,
            priority: 'urgent',
            status: 'resolved',
            created_at: '2025-03-28T15:00:00Z',
            updated_at: '2025-04-02T08:00:00Z',
            resolved_at: '2025-04-02T08:00:00Z',
          }),
          ticket({
            id: B2,
            ticket_number: 202,
            priority: 'high',
            status: 'open',
            created_at: '2025-03-28T15:00:00Z',
            updated_at: '2025-03-28T15:00:00Z',
          }),
          ticket({
            id: B3,
            ticket_number: 203,
            priority: 'high',
            status: 'resolved',
            created_at: '2025-03-31T08:00:00Z',
            updated_at: '2025-04-02T07:30:00Z',
            resolved_at: '2025-04-02T07:30:00Z',
          }),
        ];
        const messages = [
          message({
            ticket_id: B1,
            ticket_number: 201,
            role: 'customer',
            created_at: '2025-03-28T15:00:00Z',
          }),
          message({ ticket_id: B1, ticket_number: 201, role: 'agent', created_at: '2025-03-31T07:30:00Z' }),
          message({
            ticket_id: B2,
            ticket_number: 202,
            role: 'customer',
            created_at: '2025-03-28T15:00:00Z',
          }),
          message({
            ticket_id: B3,
            ticket_number: 203,
            role: 'customer',
            created_at: '2025-03-31T08:00:00Z',
          }),
          message({ ticket_id: B3, ticket_number: 203, role: 'agent', created_at: '2025-03-31T09:00:00Z' }),
        ];
        await writeBatch(dest, { table: 'tickets', rows: tickets.map(input) });
        await writeBatch(dest, { table: 'ticket_messages', rows: messages.map(input) });
      }, 600_000);

      it('without a business-hours file every business-time column is null', async () => {
        await writeBusinessCalendar(dest, undefined, new Date());
        for (const [id, m] of await metrics()) expect(m, id).toEqual(allNull);
      });

      it('business seconds across a weekend, a DST change and a holiday; breach flags against the targets', async () => {
        await writeBusinessCalendar(dest, berlin(true), new Date());
        const m = await metrics();
        // B1: reply Fri 15:00–16:00 UTC (1 h) + Sun 00:00–03:00 UTC (3 h, 01:00 CET–05:00 CEST) + Mon 07:00–07:30
        // UTC (0.5 h, 09:00 CEST); resolution adds the rest of Monday (7.5 h), nothing on the holiday, and
        // Wed 07:00–08:00 UTC (1 h): 13 h, within the day's target.
        expect(m.get(B1)).toEqual({
          first_reply_business_seconds: 4.5 * 3600,
          full_resolution_business_seconds: 13 * 3600,
          first_reply_breached: true,
          resolution_breached: false,
        });
        // B2: open and unanswered since Friday: past both targets at the run time, durations null while open.
        expect(m.get(B2)).toEqual({
          first_reply_business_seconds: null,
          full_resolution_business_seconds: null,
          first_reply_breached: true,
          resolution_breached: true,
        });
        // B3: reply in 1 h; resolution Mon 08:00–15:00 UTC (7 h) + Wed 07:00–07:30 UTC: both within target.
        expect(m.get(B3)).toEqual({
          first_reply_business_seconds: 3600,
          full_resolution_business_seconds: 7.5 * 3600,
          first_reply_breached: false,
          resolution_breached: false,
        });
        // Priority medium has no target: durations, no flags.
        expect(m.get(H1)).toMatchObject({ first_reply_breached: null, resolution_breached: null });
        expect(m.get(H1)!['first_reply_business_seconds']).toBe(0); // 10:00–10:30 UTC on a Saturday
        const [targets] = await dest.select(
          (d) =>
            `SELECT COUNT(*) AS n FROM ${d.table('sla_targets')} WHERE ${d.ident('_deleted_at')} IS NULL`,
        );
        expect(Number(targets!['n'])).toBe(2);
      });

      it('a changed file rewrites the calendar; a removed one leaves the columns null again', async () => {
        await writeBusinessCalendar(dest, berlin(false), new Date());
        expect((await metrics()).get(B1)).toMatchObject({
          first_reply_business_seconds: 1.5 * 3600,
          full_resolution_business_seconds: 10 * 3600,
        });
        await writeBusinessCalendar(dest, undefined, new Date());
        for (const [id, m] of await metrics()) expect(m, id).toEqual(allNull);
      });
    });
  });
}
