import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Destination } from '../../connectors/destination.js';
import type { MetricCatalogEntry, ReportResult } from '../../schemas/api/index.js';
import type { ReportSnapshotInput } from '../../schemas/warehouse.js';
import { WAREHOUSE_VIEWS } from '../../schemas/warehouse-views.js';
import { input, message, survey, ticket, writeBatch } from './fixtures.js';

/**
 * The BI views (schemas/warehouse-views.ts) against a small hand-built warehouse, per destination. Each
 * view is checked against what the raw tables say: facts worked out by hand from the fixtures below, and
 * hand-written queries over the raw tables where a query says it more plainly than a list.
 */
export interface ViewsHarness {
  /** A destination on an empty schema/dataset of its own. */
  create(): Promise<Destination>;
  /** Column names of a view in order. */
  viewColumns(view: string): Promise<string[]>;
  teardown(): Promise<void>;
}

const T1 = '00000000-0000-4000-8000-000000000001';
const T2 = '00000000-0000-4000-8000-000000000002';
const T3 = '00000000-0000-4000-8000-000000000003';
const T4 = '00000000-0000-4000-8000-000000000004';
const DELETED_MESSAGE = '10000000-0000-4000-8000-000000000099';

const tickets = [
  // Resolved, with a thread (AI replies first, then a human) and two answered CSAT surveys.
  ticket({
    id: T1,
    ticket_number: 1,
    status: 'resolved',
    created_at: '2025-03-01T10:00:00Z',
    updated_at: '2025-03-01T14:00:00Z',
    resolved_at: '2025-03-01T14:00:00Z',
  }),
  // Open; the API would clear resolved_at on a reopen, but if a stale value is there it must not count.
  ticket({
    id: T2,
    ticket_number: 2,
    status: 'open',
    channel: 'whatsapp',
    created_at: '2025-03-02T08:00:00Z',
    updated_at: '2025-03-02T09:00:00Z',
    resolved_at: '2025-03-02T09:00:00Z',
  }),
  // Deleted at the source.
  ticket({
    id: T3,
    ticket_number: 3,
    created_at: '2025-03-03T08:00:00Z',
    updated_at: '2025-03-03T08:00:00Z',
  }),
  // Closed without any message.
  ticket({
    id: T4,
    ticket_number: 4,
    status: 'closed',
    created_at: '2025-03-04T00:00:00Z',
    updated_at: '2025-03-05T00:00:00Z',
    resolved_at: '2025-03-05T00:00:00Z',
  }),
];

const messages = [
  message({ ticket_id: T1, ticket_number: 1, role: 'customer', created_at: '2025-03-01T10:00:00Z' }),
  message({
    ticket_id: T1,
    ticket_number: 1,
    role: 'ai',
    direction: 'outbound',
    created_at: '2025-03-01T10:05:00.500Z',
  }),
  message({
    ticket_id: T1,
    ticket_number: 1,
    role: 'agent',
    direction: 'outbound',
    created_at: '2025-03-01T10:30:00Z',
  }),
  message({ ticket_id: T1, ticket_number: 1, role: 'customer', created_at: '2025-03-01T10:40:00Z' }),
  // An outbound message before the customer wrote is not a reply to them.
  message({
    ticket_id: T2,
    ticket_number: 2,
    role: 'agent',
    direction: 'outbound',
    created_at: '2025-03-02T08:00:00Z',
  }),
  message({ ticket_id: T2, ticket_number: 2, role: 'customer', created_at: '2025-03-02T08:10:00Z' }),
  message({
    id: DELETED_MESSAGE,
    ticket_id: T2,
    ticket_number: 2,
    role: 'agent',
    direction: 'outbound',
    created_at: '2025-03-02T08:15:00Z',
  }),
  message({
    ticket_id: T2,
    ticket_number: 2,
    role: 'agent',
    direction: 'outbound',
    created_at: '2025-03-02T08:20:00Z',
  }),
  message({ ticket_id: T3, ticket_number: 3, role: 'customer', created_at: '2025-03-03T08:00:00Z' }),
];

const surveys = [
  survey({ ticket_id: T1, score: 3, sent_at: '2025-03-01T15:00:00Z', submitted_at: '2025-03-02T09:00:00Z' }),
  survey({ ticket_id: T1, score: 5, sent_at: '2025-03-01T16:00:00Z', submitted_at: '2025-03-03T09:00:00Z' }),
  survey({ ticket_id: T2, score: null, sent_at: '2025-03-02T10:00:00Z', submitted_at: null }),
];

const DAILY_QUERY =
  'FROM tickets\nSHOW new_tickets\nDURING this_week\nTIMESERIES day\nCOMPARE TO previous_period\nVISUALIZE new_tickets TYPE line';
const WEEKLY_QUERY =
  'FROM tickets\nSHOW new_tickets\nDURING this_month\nTIMESERIES week\nVISUALIZE new_tickets TYPE line';

const series = (points: [string, number, number][]): ReportResult => ({
  kind: 'time-series',
  format: 'count',
  series: [
    { key: 'new_tickets', label: 'New tickets' },
    { key: 'new_tickets__compare', label: 'New tickets (previous period)' },
  ],
  // Point dates as the companion gives them (local midnight as an ISO instant); `day` is their date part.
  points: points.map(([date, v, c]) => ({
    date: `${date}T00:00:00Z`,
    label: date,
    values: { new_tickets: v, new_tickets__compare: c },
  })),
});

const snapshots: ReportSnapshotInput[] = [
  {
    query: DAILY_QUERY,
    timezone: 'UTC',
    taken_at: '2025-03-02T00:00:00Z',
    result: series([['2025-03-01', 1, 4]]),
  },
  // A later snapshot: 2025-03-01 grew (creation cohorts develop), 2025-03-02 is new.
  {
    query: DAILY_QUERY,
    timezone: 'UTC',
    taken_at: '2025-03-03T00:00:00Z',
    result: series([
      ['2025-03-01', 2, 4],
      ['2025-03-02', 1, 0],
    ]),
  },
  {
    query: WEEKLY_QUERY,
    timezone: 'UTC',
    taken_at: '2025-03-03T00:00:00Z',
    result: { ...series([['2025-02-24', 9, 9]]) },
  },
  {
    query: 'FROM tickets\nSHOW new_tickets\nDURING today\nVISUALIZE new_tickets TYPE kpi',
    timezone: 'UTC',
    taken_at: '2025-03-03T00:00:00Z',
    result: { kind: 'kpi', value: 7, previousValue: 5, format: 'count' },
  },
];

const catalogEntry: MetricCatalogEntry = {
  id: 'new_tickets',
  label: 'New tickets',
  description: 'Tickets created in the period',
  group: 'volume',
  dataType: 'integer',
  format: 'count',
  aggregation: 'count',
  attribution: 'ticket_created',
  snapshot: false,
  higherIsBetter: false,
};

const run = (over: Partial<Parameters<Destination['bookkeeping']['recordRun']>[0]>) => ({
  run_id: 'r',
  parent_run_id: 'parent',
  workflow_id: 'tickets/x/y',
  stream: 'tickets',
  window_start: null,
  window_end: null,
  mode: 'incremental' as const,
  status: 'succeeded' as const,
  started_at: '2025-03-05T00:00:00.000000Z',
  finished_at: '2025-03-05T00:01:00.000000Z',
  pages: 1,
  rows_written: 1,
  requests: 1,
  error: null,
  ...over,
});

const windows = [
  // csat_surveys.sent: [Jan 1, Feb 1) + [Feb 1, Mar 1) touch → one interval; [Mar 10, Mar 20) is separate.
  ['csat_surveys.sent', '2025-01-01', '2025-02-01', 'succeeded'],
  ['csat_surveys.sent', '2025-02-01', '2025-03-01', 'succeeded'],
  ['csat_surveys.sent', '2025-03-10', '2025-03-20', 'succeeded'],
  // A failed window covers nothing.
  ['csat_surveys.sent', '2025-03-01', '2025-03-10', 'failed'],
  // Tickets: overlapping incremental windows merge.
  ['tickets', '2025-01-01', '2025-03-05', 'succeeded'],
  ['tickets', '2025-03-02', '2025-03-06', 'succeeded'],
  // Reference snapshots are not source-time coverage.
  ['views', '2025-03-05', '2025-03-06', 'succeeded'],
] as const;

const sorted = <T extends Record<string, unknown>>(rows: T[], ...keys: string[]) =>
  [...rows].sort((a, b) => {
    for (const k of keys) {
      const x = String(a[k]);
      const y = String(b[k]);
      if (x !== y) return x < y ? -1 : 1;
    }
    return 0;
  });

export function viewsSuite(name: string, makeHarness: () => Promise<ViewsHarness>) {
  describe(`BI views — ${name}`, () => {
    let h: ViewsHarness;
    let dest: Destination;
    beforeAll(async () => {
      h = await makeHarness();
      dest = await h.create();
      await dest.prepare();
      await writeBatch(dest, { table: 'tickets', rows: tickets.map(input) });
      await writeBatch(dest, { table: 'ticket_messages', rows: messages.map(input) });
      await writeBatch(dest, { table: 'csat_surveys', rows: surveys.map(input) });
      await writeBatch(dest, { table: 'metric_catalog', rows: [input(catalogEntry)] });
      await dest.markDeleted({ table: 'tickets', ids: [T3] }, new Date('2025-03-04T00:00:00Z'));
      await dest.markDeleted(
        { table: 'ticket_messages', ids: [DELETED_MESSAGE] },
        new Date('2025-03-04T00:00:00Z'),
      );
      for (const s of snapshots) {
        const { reportSnapshotValues } = await import('../../schemas/warehouse.js');
        await dest.writeTables([
          { table: 'report_snapshots', rows: [s] },
          { table: 'report_snapshot_values', rows: reportSnapshotValues(s) },
        ]);
      }
      let i = 0;
      for (const [pass, from, before, status] of windows)
        await dest.bookkeeping.recordRun(
          run({
            run_id: `w${i++}`,
            workflow_id: `${pass}/${from}T00:00:00.000Z/${before}T00:00:00.000Z`,
            stream: pass.split('.')[0]!,
            window_start: `${from}T00:00:00.000000Z`,
            window_end: `${before}T00:00:00.000000Z`,
            status,
          }),
        );
      await dest.writeTables(
        [],
        [
          {
            stream: 'csat_surveys.sent',
            scope: 'hwm',
            cursor: null,
            high_water_mark: '2025-03-20T00:00:00.000Z',
            status: 'complete',
            pages: 0,
            rows: 0,
          },
        ],
      );
      // prepare() again, as every run does: the views are replaced, not duplicated or broken.
      await dest.prepare();
    }, 600_000);
    afterAll(async () => {
      await dest?.close();
      await h?.teardown();
    });

    it('creates every view with the documented columns, in order', async () => {
      for (const view of WAREHOUSE_VIEWS)
        expect(await h.viewColumns(view.name), view.name).toEqual(view.columns.map((c) => c.name));
    });

    it('current_tickets and current_messages return what the raw tables say is not deleted', async () => {
      const viewTickets = await dest.select(
        (d) => `SELECT id FROM ${d.table('current_tickets')} ORDER BY id`,
      );
      const rawTickets = await dest.select(
        (d) => `SELECT id FROM ${d.table('tickets')} WHERE ${d.ident('_deleted_at')} IS NULL ORDER BY id`,
      );
      expect(viewTickets).toEqual(rawTickets);
      expect(viewTickets.map((r) => r['id'])).toEqual([T1, T2, T4]);

      const viewMessages = await dest.select(
        (d) => `SELECT id FROM ${d.table('current_messages')} ORDER BY id`,
      );
      const rawMessages = await dest.select(
        (
          d,
        ) => `SELECT m.id FROM ${d.table('ticket_messages')} m JOIN ${d.table('tickets')} t ON t.id = m.ticket_id
          WHERE m.${d.ident('_deleted_at')} IS NULL AND t.${d.ident('_deleted_at')} IS NULL ORDER BY m.id`,
      );
      expect(viewMessages).toEqual(rawMessages);
      expect(viewMessages).toHaveLength(7); // 9 messages, one deleted, one on the deleted ticket
    });

    it('ticket_facts: first reply, response and resolution times, counts, latest CSAT score', async () => {
      const rows = await dest.select(
        (
          d,
        ) => `SELECT ticket_id, first_customer_message_at, first_reply_at, first_response_seconds, first_human_reply_at,
          first_human_response_seconds, resolved_at, resolution_seconds, message_count, customer_message_count,
          reply_count, csat_score, reopen_count FROM ${d.table('ticket_facts')} ORDER BY ticket_id`,
      );
      expect(rows).toEqual([
        {
          ticket_id: T1,
          first_customer_message_at: '2025-03-01T10:00:00.000000Z',
          first_reply_at: '2025-03-01T10:05:00.500000Z',
          first_response_seconds: 300.5,
          first_human_reply_at: '2025-03-01T10:30:00.000000Z',
          first_human_response_seconds: 1800,
          resolved_at: '2025-03-01T14:00:00.000000Z',
          resolution_seconds: 14_400,
          message_count: 4,
          customer_message_count: 2,
          reply_count: 2,
          csat_score: 5,
          reopen_count: null,
        },
        {
          ticket_id: T2,
          first_customer_message_at: '2025-03-02T08:10:00.000000Z',
          first_reply_at: '2025-03-02T08:20:00.000000Z',
          first_response_seconds: 600,
          first_human_reply_at: '2025-03-02T08:20:00.000000Z',
          first_human_response_seconds: 600,
          resolved_at: null,
          resolution_seconds: null,
          message_count: 3,
          customer_message_count: 1,
          reply_count: 2,
          csat_score: null,
          reopen_count: null,
        },
        {
          ticket_id: T4,
          first_customer_message_at: null,
          first_reply_at: null,
          first_response_seconds: null,
          first_human_reply_at: null,
          first_human_response_seconds: null,
          resolved_at: '2025-03-05T00:00:00.000000Z',
          resolution_seconds: 86_400,
          message_count: 0,
          customer_message_count: 0,
          reply_count: 0,
          csat_score: null,
          reopen_count: null,
        },
      ]);
      // The message counts agree with a plain count over the raw tables.
      const raw = await dest.select(
        (d) => `SELECT m.ticket_id, COUNT(*) AS n FROM ${d.table('ticket_messages')} m
          WHERE m.${d.ident('_deleted_at')} IS NULL GROUP BY m.ticket_id`,
      );
      for (const r of rows.filter((x) => Number(x['message_count']) > 0))
        expect(raw.find((x) => x['ticket_id'] === r['ticket_id'])?.['n']).toBe(r['message_count']);
    });

    it('report_daily_values: daily series only, latest snapshot per day, comparison flagged, catalog aggregation', async () => {
      const rows = await dest.select(
        (
          d,
        ) => `SELECT day, point_date, metric_id, is_comparison, series_label, format, aggregation, value, taken_at
          FROM ${d.table('report_daily_values')}`,
      );
      expect(sorted(rows, 'day', 'is_comparison')).toEqual([
        {
          day: '2025-03-01',
          point_date: '2025-03-01T00:00:00Z',
          metric_id: 'new_tickets',
          is_comparison: false,
          series_label: 'New tickets',
          format: 'count',
          aggregation: 'count',
          value: 2,
          taken_at: '2025-03-03T00:00:00.000000Z',
        },
        {
          day: '2025-03-01',
          point_date: '2025-03-01T00:00:00Z',
          metric_id: 'new_tickets',
          is_comparison: true,
          series_label: 'New tickets (previous period)',
          format: 'count',
          aggregation: 'count',
          value: 4,
          taken_at: '2025-03-03T00:00:00.000000Z',
        },
        {
          day: '2025-03-02',
          point_date: '2025-03-02T00:00:00Z',
          metric_id: 'new_tickets',
          is_comparison: false,
          series_label: 'New tickets',
          format: 'count',
          aggregation: 'count',
          value: 1,
          taken_at: '2025-03-03T00:00:00.000000Z',
        },
        {
          day: '2025-03-02',
          point_date: '2025-03-02T00:00:00Z',
          metric_id: 'new_tickets',
          is_comparison: true,
          series_label: 'New tickets (previous period)',
          format: 'count',
          aggregation: 'count',
          value: 0,
          taken_at: '2025-03-03T00:00:00.000000Z',
        },
      ]);
    });

    it('_reconciliation: rows upserted by (run_id, metric, period), any text in notes and names, latest run listed', async () => {
      const base = {
        run_id: 'run-a',
        metric: 'new_tickets',
        period: '2025-03-01',
        source_value: 3,
        warehouse_value: 3,
        status: 'equal' as const,
        note: null,
        checked_at: '2025-03-05T00:00:00.000000Z',
      };
      const odd = {
        ...base,
        metric: 'view_count:Billing "escalations" (EU), l\'équipe ✓',
        period: 'now',
        source_value: 4,
        warehouse_value: null,
        status: 'skipped' as const,
        note: 'filter condition "tag" … not computed; 50% — spec 2.4\nsecond line',
      };
      await dest.bookkeeping.recordReconciliation([base, odd]);
      // A retry of the same check rewrites, never duplicates; a later run is listed by default.
      await dest.bookkeeping.recordReconciliation([
        { ...base, warehouse_value: 2, status: 'mismatch', note: 'short by one' },
      ]);
      await dest.bookkeeping.recordReconciliation([
        { ...base, run_id: 'run-b', checked_at: '2025-03-06T00:00:00.000000Z' },
      ]);
      expect(await dest.bookkeeping.listReconciliation('run-a')).toEqual(
        sorted(
          [{ ...base, warehouse_value: 2, status: 'mismatch', note: 'short by one' }, odd],
          'metric',
          'period',
        ),
      );
      expect((await dest.bookkeeping.listReconciliation()).map((r) => r.run_id)).toEqual(['run-b']);
    });

    it('sync_coverage: merged intervals of succeeded windows per pass, with the high-water mark', async () => {
      const rows = await dest.select(
        (d) =>
          `SELECT pass, covered_from, covered_until, windows, high_water_mark FROM ${d.table('sync_coverage')}`,
      );
      expect(sorted(rows, 'pass', 'covered_from')).toEqual([
        {
          pass: 'csat_surveys.sent',
          covered_from: '2025-01-01T00:00:00.000000Z',
          covered_until: '2025-03-01T00:00:00.000000Z',
          windows: 2,
          high_water_mark: '2025-03-20T00:00:00.000Z',
        },
        {
          pass: 'csat_surveys.sent',
          covered_from: '2025-03-10T00:00:00.000000Z',
          covered_until: '2025-03-20T00:00:00.000000Z',
          windows: 1,
          high_water_mark: '2025-03-20T00:00:00.000Z',
        },
        {
          pass: 'tickets',
          covered_from: '2025-01-01T00:00:00.000000Z',
          covered_until: '2025-03-06T00:00:00.000000Z',
          windows: 2,
          high_water_mark: null,
        },
      ]);
    });
  });
}
