import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ReconciliationRecord } from '../../schemas/warehouse.js';
import type { SqlDialect } from '../../schemas/warehouse-views.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';

type RunSummary = Awaited<ReturnType<Pipeline['run']>>;

/**
 * A warehouse the tie-out must hold on (test/e2e/ticket-history.test.ts: PostgreSQL;
 * test/e2e/ticket-history-bigquery.test.ts: BigQuery on the emulator, in the test suite's BigQuery lane).
 * `env` points the pipeline's destination at the warehouse; `stop` releases what `env` started. `rounds`:
 * rounds of changes between runs (tickets reopened in one round are resolved in the next).
 */
export interface HistoryWarehouse {
  kind: SqlDialect['kind'];
  rounds: number;
  env: () => Promise<{ env: Record<string, string>; stop: () => Promise<void> }>;
}

/** A timestamp cell as epoch ms, whichever warehouse read it (pg: a Date; BigQuery: an ISO string). */
const epochMs = (v: unknown): number => (v instanceof Date ? v.getTime() : Date.parse(String(v)));

/**
 * ticket_history against a living world, and the tie-out of the report metrics. The companion's world is
 * generated as of today's UTC midnight (its live mode's `since`, with no round due), so every event of
 * today comes from the test's own rounds of changes between runs: the companion's recorded timeline is
 * what the history must show, at the schedule's granularity, and the API's reopened_tickets and
 * resolved_tickets for today must equal what the warehouse derives from the history. The same suite runs on
 * each warehouse: every read and every change goes through the destination, in its dialect.
 */

type Row = ReconciliationRecord;

const today = () => new Date().toISOString().slice(0, 10);

export function ticketHistorySuite({ kind, rounds, env }: HistoryWarehouse): void {
  describe(`ticket_history from the sweeps, and the tie-out of every metric the views compute, on ${kind}`, () => {
    let p: Pipeline;
    let stopWarehouse: (() => Promise<void>) | undefined;
    let firstRunId = '';
    const midnight = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());

    beforeAll(async () => {
      const warehouse = await env();
      stopWarehouse = warehouse.stop;
      p = await startPipeline('e2e_history', {
        env: warehouse.env,
        companion: {
          seed: 31,
          tickets: 300,
          rateLimits: false,
          // Generated as of midnight; no live round falls due before the test ends (a timer's longest delay is
          // 2^31 ms).
          live: { since: new Date(midnight), intervalMs: 20 * DAY_MS },
        },
      });
    }, 600_000);
    afterAll(async () => {
      await p?.close();
      await stopWarehouse?.();
    });

    /** The run's tie-out rows, read through the destination (either warehouse). */
    const reconciliation = async (runId: string): Promise<Row[]> =>
      (await p.deps.destination.bookkeeping.listReconciliation(runId)).sort(
        (a, b) => a.metric.localeCompare(b.metric) || a.period.localeCompare(b.period),
      );
    /** A query in the destination's own dialect. */
    const select = (build: (d: SqlDialect) => string) => p.deps.destination.select(build);
    /** A change to the warehouse that no sync made (the destination runs any statement its dialect builds). */
    const behindTheSyncsBack = async (build: (d: SqlDialect) => string) => {
      await p.deps.destination.select(build);
    };

    /** Each live ticket's status in the companion now, and in ticket_history at `at`. */
    const statuses = async (at: Date) => {
      const world = p.companion.world;
      const source = new Map(
        world
          .ticketsSorted(world.orgA.id)
          .filter((t) => t.deletedAt === null)
          .map((t) => [t.id, t.status as string]),
      );
      const held = new Map(
        (
          await select(
            (d) => `SELECT h.ticket_id, h.status FROM ${d.table('ticket_history')} h
           JOIN ${d.table('tickets')} t ON t.id = h.ticket_id AND t._deleted_at IS NULL
           WHERE h.valid_from <= ${d.timestamp(at.toISOString())} AND (h.valid_to IS NULL OR h.valid_to > ${d.timestamp(at.toISOString())})`,
          )
        ).map((r) => [r.ticket_id as string, r.status as string]),
      );
      return { source, held };
    };

    const run = async (): Promise<RunSummary> => {
      const summary = await p.run('incremental');
      expect(summary.error).toBeUndefined();
      expect(summary.status).toBe('succeeded');
      return summary;
    };

    it('the first sync starts every ticket’s history at what it sees, and the tie-out has no mismatch', async () => {
      const summary = await run();
      firstRunId = summary.run_id;
      const at = new Date();
      const { source, held } = await statuses(at);
      expect(source.size).toBeGreaterThan(250);
      expect(Object.fromEntries(held)).toEqual(Object.fromEntries(source));
      const precision = await select(
        (d) => `SELECT DISTINCT valid_from_precision AS k FROM ${d.table('ticket_history')}`,
      );
      // Only first sightings so far: since creation (never changed) or since the last change.
      expect(precision.map((r) => r['k']).sort()).toEqual(['created', 'first_seen']);

      const rows = await reconciliation(summary.run_id);
      expect(summary.reconciliation).toMatchObject({ mismatch: 0, moving: 0 });
      const byMetric = (m: string) => rows.filter((r) => r.metric === m);
      // Counts the warehouse knows whole: exact every day.
      for (const m of ['new_tickets', 'tickets_replied_to', 'csat_responses', 'backlog_now']) {
        expect(byMetric(m).length, m).toBeGreaterThan(0);
        for (const r of byMetric(m)) expect(r, `${m} ${r.period}`).toMatchObject({ status: 'equal' });
      }
      expect(byMetric('new_tickets').reduce((a, r) => a + (r.source_value ?? 0), 0)).toBeGreaterThan(20);
      // Medians, averages and sums: within the stated tolerance, every day and over the period.
      for (const m of [
        'customer_first_response_time',
        'human_first_response_time',
        'full_resolution_time',
        'csat_average',
        'agent_online_time',
      ]) {
        expect(byMetric(m).length, m).toBeGreaterThanOrEqual(15);
        for (const r of byMetric(m)) {
          expect(r.status, `${m} ${r.period}: ${r.source_value} vs ${r.warehouse_value}`).toBe('equal');
          expect(r.note).toMatch(/Equal within/);
        }
      }
      expect(byMetric('customer_first_response_time').some((r) => (r.source_value ?? 0) > 0)).toBe(true);
      // History-based counts: equal, or lower before the history began — explained, never a mismatch.
      for (const m of ['resolved_tickets', 'reopened_tickets']) {
        for (const r of byMetric(m)) {
          if (r.status === 'explained') {
            expect(r.warehouse_value!).toBeLessThan(r.source_value!);
            expect(r.note).toMatch(/Cannot be equal: .*first synced/);
          } else expect(r, `${m} ${r.period}`).toMatchObject({ status: 'equal' });
        }
      }
      expect(byMetric('resolved_tickets').filter((r) => r.status === 'equal').length).toBeGreaterThan(5);
    });

    it(`over ${rounds} round(s) of changes, the history follows the companion’s timeline and ties out reopens and resolutions`, async () => {
      const world = p.companion.world;
      let reopened = 0;
      let reopenedLastRound: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const roundStart = Date.now();
        // The living world's own mix of changes, and explicit reopens and resolutions on top: tickets reopened
        // in the previous round are resolved again (several intervals per ticket).
        p.companion.live.tick(20);
        for (const n of reopenedLastRound) world.setTicketStatus(n, 'resolved');
        const live = world
          .ticketsSorted(world.orgA.id)
          .filter((t) => t.deletedAt === null && t.ticketType === 'regular');
        const done = live.filter(
          (t) => (t.status === 'resolved' || t.status === 'closed') && !reopenedLastRound.includes(t.number),
        );
        reopenedLastRound = done.slice(round * 3, round * 3 + 3).map((t) => t.number);
        for (const n of reopenedLastRound) world.setTicketStatus(n, 'open');
        // Not a ticket whose status already changed this round: a reopen undone before the next sweep leaves
        // no trace (the schedule's granularity), which is not what this test measures.
        const changedThisRound = new Set(
          world.events
            .filter((e) => e.type === 'status_changed' && e.at >= roundStart)
            .map((e) => e.ticketIdx),
        );
        const open = live.filter((t) => t.status === 'open' && !changedThisRound.has(t.idx));
        for (const t of open.slice(round * 2, round * 2 + 2)) world.setTicketStatus(t.number, 'resolved');

        const summary = await run();
        const at = new Date();
        const { source, held } = await statuses(at);
        expect(Object.fromEntries(held)).toEqual(Object.fromEntries(source));

        // Each status change of the round: the interval it began starts at or after the change, and no later
        // than the sweep that saw it (the schedule's granularity), exactly at it where resolved_at or a single
        // change pins it.
        const changes = world.events.filter((e) => e.type === 'status_changed' && e.at >= roundStart);
        const lastChange = new Map<string, number>();
        for (const e of changes) {
          const t = world.tickets[e.ticketIdx]!;
          if (t.deletedAt === null) lastChange.set(t.id, Math.max(lastChange.get(t.id) ?? 0, e.at));
        }
        expect(lastChange.size).toBeGreaterThan(3);
        const current = await select(
          (d) => `SELECT ticket_id, valid_from, valid_from_precision FROM ${d.table('ticket_history')}
          WHERE valid_to IS NULL AND ticket_id IN (${[...lastChange.keys()].map((id) => d.string(id)).join(', ')})`,
        );
        expect(current).toHaveLength(lastChange.size);
        let exact = 0;
        for (const r of current) {
          const from = epochMs(r['valid_from']);
          const changedAt = lastChange.get(String(r['ticket_id']))!;
          expect(from, `${r['ticket_id']} ${r['valid_from_precision']}`).toBeGreaterThanOrEqual(changedAt);
          expect(from).toBeLessThanOrEqual(at.getTime());
          if (from === changedAt) exact++;
        }
        expect(exact).toBeGreaterThan(0);

        // Reopens and resolutions derived from the history equal the API's, today.
        const rows = await reconciliation(summary.run_id);
        for (const m of ['reopened_tickets', 'resolved_tickets']) {
          const r = rows.find((x) => x.metric === m && x.period === today());
          expect(r, m).toBeDefined();
          expect(r, `${m} today`).toMatchObject({ status: 'equal' });
          expect(r!.warehouse_value).toBe(r!.source_value);
        }
        reopened = rows.find((x) => x.metric === 'reopened_tickets' && x.period === today())!.source_value!;
        expect(summary.reconciliation?.mismatch, JSON.stringify(summary.reconciliation?.mismatches)).toBe(0);
      }
      // Three tickets are reopened by hand each round: per round, at least two in the API's count for today
      // and three in the history.
      expect(reopened).toBeGreaterThanOrEqual(2 * rounds);
      const [transitions] = await select(
        (d) => `SELECT COALESCE(SUM(CASE WHEN is_reopen THEN 1 ELSE 0 END), 0) AS reopens,
         COALESCE(SUM(CASE WHEN is_resolution THEN 1 ELSE 0 END), 0) AS resolutions,
         COALESCE(SUM(CASE WHEN valid_from_precision = 'resolved_at' THEN 1 ELSE 0 END), 0) AS pinned
       FROM ${d.table('ticket_history')}`,
      );
      expect(Number(transitions!['reopens'])).toBeGreaterThanOrEqual(3 * rounds);
      expect(Number(transitions!['resolutions'])).toBeGreaterThan(0);
      expect(Number(transitions!['pinned'])).toBeGreaterThan(0);
      // ticket_facts counts the reopens the sweeps saw.
      const [facts] = await select(
        (d) => `SELECT COALESCE(SUM(reopen_count), 0) AS n FROM ${d.table('ticket_facts')}`,
      );
      expect(Number(facts!['n'])).toBe(Number(transitions!['reopens']));
    }, 480_000);

    it('a source that moves during the comparison is reported as moving, a still one as a mismatch', async () => {
      const { reconcile } = await import('../../activities/reconcile.js');
      // A ticket created after the sync read the list: the API counts it, the warehouse does not yet.
      const before = new Date().toISOString();
      world().createTicket({ channel: 'email', subject: 'Arrives after the read', messages: [] });
      // Between the first reading and the re-read the world keeps moving (a second new ticket).
      let calls = 0;
      const client = new Proxy(p.deps.client, {
        get(target, prop, receiver) {
          if (prop !== 'queryReport') {
            const value = Reflect.get(target, prop, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
          }
          return async (body: Parameters<typeof target.queryReport>[0]) => {
            const result = await target.queryReport(body);
            calls++;
            if (calls === 1)
              world().createTicket({ channel: 'email', subject: 'Arrives later', messages: [] });
            return result;
          };
        },
      });
      const moving = await reconcile({ ...p.deps, client, logger: undefined as never })({
        runId: 'moving',
        before,
        days: 2,
        views: false,
      });
      const rows = await reconciliation('moving');
      const newToday = rows.find((r) => r.metric === 'new_tickets' && r.period === today())!;
      expect(newToday).toMatchObject({ status: 'moving' });
      expect(newToday.note).toMatch(/the source read \d+ during the comparison and \d+ after it/);
      expect(moving.moving).toBeGreaterThan(0);

      // A saved view's count read at another instant than the tickets (the demo's living world): the count
      // synced says one more than the warehouse holds; read again, the source agrees with the warehouse or
      // has moved on — moving, not a mismatch.
      const computed = (await reconciliation(firstRunId)).find(
        (r) => r.metric.startsWith('view_count:') && r.status === 'equal',
      )!;
      expect(computed).toBeDefined();
      await behindTheSyncsBack(
        (d) =>
          `UPDATE ${d.table('views')} SET count = count + 1 WHERE name = ${d.string(computed.metric.slice('view_count:'.length))}`,
      );
      await reconcile({ ...p.deps, logger: undefined as never })({
        runId: 'view-moving',
        before: new Date().toISOString(),
        days: 1,
        views: true,
      });
      const viewRow = (await reconciliation('view-moving')).find((r) => r.metric === computed.metric)!;
      expect(viewRow).toMatchObject({ status: 'moving' });
      expect(viewRow.note).toMatch(/Moving: the source read \d+ during the comparison and \d+ after it/);

      // Still source, warehouse short of one ticket: a mismatch naming metric, day and both numbers.
      const [victim] = await select(
        (d) => `SELECT id, ${d.utcDay('created_at')} AS day FROM ${d.table('tickets')}
            WHERE _deleted_at IS NULL AND created_at < ${d.timestamp(new Date(midnight).toISOString())}
            ORDER BY created_at DESC LIMIT 1`,
      );
      const { id, day } = victim as { id: string; day: string };
      await behindTheSyncsBack((d) => `DELETE FROM ${d.table('tickets')} WHERE id = ${d.string(id)}`);
      const still = await reconcile({ ...p.deps, logger: undefined as never })({
        runId: 'still',
        before: new Date().toISOString(),
        days: 2,
        views: false,
      });
      expect(still.mismatches).toContainEqual(
        expect.stringMatching(new RegExp(`^new_tickets ${day}: source \\d+, warehouse \\d+$`)),
      );
    });

    const world = () => p.companion.world;
  });
}
