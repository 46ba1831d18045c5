import { describe, expect, it } from 'vitest';
import { judge, SOURCE_GRACE_MS } from '../../activities/audit/judge.js';
import { prefetchStored, takePrefetched } from '../../activities/audit/prefetch.js';
import { renderDifferences } from '../../activities/audit/render.js';
import { type RowFilter, rowMatches } from '../../connectors/row-filter.js';
import { splitBudget, tableResult, upperBound95 } from '../../schemas/audit.js';
import { type TableSpec, tableSpecOf, type WarehouseRow } from '../../schemas/warehouse.js';
import { message as messageFixture, ticket } from '../destinations/fixtures.js';

/** P(X ≤ k) for X ~ Binomial(n, p), summed directly (small n): an independent check of the bound. */
function cdf(k: number, n: number, p: number): number {
  let sum = 0;
  let choose = 1;
  for (let i = 0; i <= k; i++) {
    sum += choose * p ** i * (1 - p) ** (n - i);
    choose = (choose * (n - i)) / (i + 1);
  }
  return sum;
}

describe('the 95 % upper bound on the share of rows that differ', () => {
  it('is 1 − 0.05^(1/n) when none of n differ: the rule of three, 3/n, for large n', () => {
    expect(upperBound95(1, 0)).toBeCloseTo(0.95, 10);
    expect(upperBound95(6, 0)).toBeCloseTo(1 - 0.05 ** (1 / 6), 10);
    expect(upperBound95(3000, 0)).toBeGreaterThan(0.00099);
    expect(upperBound95(3000, 0) / (3 / 3000)).toBeCloseTo(1, 2);
  });

  it('is exact (Clopper–Pearson): seeing k or fewer at the bound has probability 5 %', () => {
    for (const [n, k] of [
      [100, 5],
      [40, 1],
      [200, 17],
    ] as const) {
      const bound = upperBound95(n, k);
      expect(cdf(k, n, bound)).toBeCloseTo(0.05, 6);
      expect(cdf(k, n, bound - 0.001)).toBeGreaterThan(0.05);
      expect(bound).toBeGreaterThan(k / n);
    }
  });

  it('knows nothing of an empty sample, and a table result rounds its bound up', () => {
    expect(upperBound95(0, 0)).toBe(1);
    const r = tableResult({
      equal: 6,
      differs: 0,
      missing_in_warehouse: 0,
      missing_in_source: 0,
      changed_since: 2,
      healed: 0,
    });
    expect(r).toMatchObject({ sampled: 6, differs: 0, changed_since: 2, share: 0 });
    expect(r.bound).toBeGreaterThanOrEqual(upperBound95(6, 0));
    expect(r.bound - upperBound95(6, 0)).toBeLessThan(1e-4);
  });
});

describe("each table's share of its class's budget", () => {
  const tables = ['tickets', 'ticket_messages', 'csat_surveys', 'agent_sessions'] as const;
  it('splits a class evenly between its tables (detail: tickets and threads)', () => {
    expect(splitBudget(tables, { detail: 12, analytics: 4 }, 0)).toEqual({
      tickets: 6,
      ticket_messages: 6,
      csat_surveys: 2,
      agent_sessions: 2,
    });
  });
  it('gives a remainder by turns: one analytics request a run goes to surveys and sessions alternately', () => {
    const turn = (rotation: number) => splitBudget(tables, { detail: 12, analytics: 1 }, rotation);
    expect([turn(0).csat_surveys, turn(0).agent_sessions]).toEqual([1, 0]);
    expect([turn(1).csat_surveys, turn(1).agent_sessions]).toEqual([0, 1]);
    expect(turn(0).tickets + turn(0).ticket_messages).toBe(12);
  });
});

const ticketItem = ticket({ updated_at: '2026-11-21T10:00:00.123Z' });
const tickets = tableSpecOf('tickets') as TableSpec<unknown>;
const served = (item: Record<string, unknown>) => ({
  item: item as { id: string },
  raw: JSON.parse(JSON.stringify(item)) as Record<string, unknown>,
});
/** The row as the warehouse holds it: the served row, edited, stamped `_synced_at`. */
const storedTicket = (edit: Record<string, unknown>, syncedAt: string): WarehouseRow => ({
  ...tickets.toRow(served(ticketItem)),
  _synced_at: syncedAt,
  ...edit,
});
const rules = {
  rawKeys: 'common' as const,
  versionColumn: 'updated_at',
  readAt: (r: WarehouseRow) => r['_synced_at'] as string,
  readThrough: null,
};
const stored = (row: WarehouseRow) => new Map([[String(row['id']), row]]);
const LATER = '2026-11-22T00:00:00.000000Z';

describe('judging a row the source serves now', () => {
  it('finds every stored field that differs, typed columns by name, other fields as _raw.<key>', () => {
    const mine = storedTicket({ status: 'closed', _raw: { ...served(ticketItem).raw, region: 'eu' } }, LATER);
    const withRegion = served({ ...ticketItem, region: 'us' });
    const [j] = judge(tickets, [withRegion], stored(mine), rules);
    expect(j).toMatchObject({ verdict: 'differs', heal: { write: withRegion } });
    expect(j!.differences).toEqual([
      { field: 'status', warehouse: 'closed', source: 'open' },
      { field: '_raw.region', warehouse: 'eu', source: 'us' },
    ]);
    expect(JSON.parse(renderDifferences('tickets', j!.differences)!)).toEqual([
      { field: 'status', warehouse: 'closed', source: 'open' },
      { field: '_raw.region', warehouse: 'eu', source: 'us' },
    ]);
  });

  it('a field only one of the ticket routes serves is not a difference (spec 2.2: further fields not shown)', () => {
    const mine = storedTicket({}, LATER);
    const [common] = judge(tickets, [served({ ...ticketItem, detail_only: 1 })], stored(mine), rules);
    expect(common!.verdict).toBe('equal');
    const [all] = judge(tickets, [served({ ...ticketItem, detail_only: 1 })], stored(mine), {
      ...rules,
      rawKeys: 'all',
    });
    expect(all!.differences).toEqual([{ field: '_raw.detail_only', warehouse: undefined, source: 1 }]);
  });

  it('a change the source stamped after the warehouse read the row is changed_since, not a difference', () => {
    const newer = { ...ticketItem, status: 'resolved', updated_at: '2026-11-21T12:00:00.000Z' };
    const readBefore = storedTicket({}, '2026-11-21T11:00:00.000000Z');
    expect(judge(tickets, [served(newer)], stored(readBefore), rules)[0]).toMatchObject({
      verdict: 'changed_since',
      heal: null,
    });
    // Stamped a little before the read: the replica may not have served it yet (SOURCE_GRACE_MS).
    const justBefore = new Date(Date.parse(newer.updated_at) + SOURCE_GRACE_MS / 2).toISOString();
    expect(judge(tickets, [served(newer)], stored(storedTicket({}, justBefore)), rules)[0]!.verdict).toBe(
      'changed_since',
    );
    // Long before the read: the read should have seen it.
    expect(judge(tickets, [served(newer)], stored(storedTicket({}, LATER)), rules)[0]!.verdict).toBe(
      'differs',
    );
  });

  it('a replica trailing the warehouse (an older version served) is not a difference', () => {
    const older = { ...ticketItem, status: 'new', updated_at: '2026-11-20T10:00:00.000Z' };
    expect(judge(tickets, [served(older)], stored(storedTicket({}, LATER)), rules)[0]!.verdict).toBe(
      'changed_since',
    );
  });

  it('rows on one side only: missing_in_warehouse unless newer than the last read, missing_in_source', () => {
    const messages = tableSpecOf('ticket_messages') as TableSpec<unknown>;
    const message = (created: string) =>
      messageFixture({
        ticket_id: ticketItem.id,
        ticket_number: ticketItem.ticket_number,
        created_at: created,
      });
    const old = served(message('2026-11-20T09:15:00Z'));
    const fresh = served(message('2026-11-21T23:59:30Z'));
    const gone = {
      ...messages.toRow(served(message('2026-11-20T10:00:00Z'))),
      _synced_at: LATER,
    };
    const threadRules = {
      rawKeys: 'all' as const,
      versionColumn: 'created_at',
      readAt: () => LATER,
      readThrough: LATER,
    };
    const judged = judge(messages, [old, fresh], stored(gone), threadRules);
    expect(judged.map((j) => [j.verdict, j.heal === null ? null : Object.keys(j.heal)[0]])).toEqual([
      ['missing_in_warehouse', 'write'],
      ['changed_since', null],
      ['missing_in_source', 'markDeleted'],
    ]);
    // The thread's latest read served the message the source no longer serves: deleted since, not missed.
    const servedByLastRead = { ...threadRules, goneSince: () => true };
    expect(judge(messages, [], stored(gone), servedByLastRead)[0]).toMatchObject({
      verdict: 'changed_since',
      heal: null,
    });
    // A thread the warehouse has queued (never read whole): nothing it lacks is a difference yet.
    expect(judge(messages, [old], new Map(), { ...threadRules, readThrough: null })[0]!.verdict).toBe(
      'changed_since',
    );
  });
});

describe("the audit plan's one read per table of what its units compare", () => {
  /** A warehouse that counts its reads and answers from rows held in memory. */
  function warehouse(rows: WarehouseRow[]) {
    const queries: string[] = [];
    const deps = {
      destination: {
        liveRows: async (_table: string, _columns: readonly string[], filter: RowFilter) => {
          queries.push(JSON.stringify(filter));
          return rows.filter((r) => rowMatches(filter, r));
        },
      },
    };
    return { deps: deps as never, queries };
  }
  const seed = (id: string, ticketNumber: number) => ({ id, ticketNumber, at: null });

  it("reads every sampled ticket's row in one query; each unit takes its own once, a missing row as none", async () => {
    const a = { id: 'a', ticket_number: 1 } as WarehouseRow;
    const b = { id: 'b', ticket_number: 2 } as WarehouseRow;
    const { deps, queries } = warehouse([a, b]);
    await prefetchStored(deps, 'run-1', 'tickets', [seed('a', 1), seed('b', 2), seed('gone', 3)]);
    expect(queries).toHaveLength(1);
    expect([...(takePrefetched('run-1', 'tickets', 'a') ?? [])]).toEqual([['a', a]]);
    expect(takePrefetched('run-1', 'tickets', 'gone')?.size).toBe(0);
    // Taken once: a retried unit reads the warehouse; another run's units find nothing here.
    expect(takePrefetched('run-1', 'tickets', 'a')).toBeUndefined();
    expect(takePrefetched('run-2', 'tickets', 'b')).toBeUndefined();
    expect([...(takePrefetched('run-1', 'tickets', 'b') ?? [])]).toEqual([['b', b]]);
  });

  it("reads every sampled thread's messages in one query, grouped by ticket number", async () => {
    const m1 = { id: 'm1', ticket_number: 7 } as WarehouseRow;
    const m2 = { id: 'm2', ticket_number: 7 } as WarehouseRow;
    const m3 = { id: 'm3', ticket_number: 9 } as WarehouseRow;
    const { deps, queries } = warehouse([m1, m2, m3]);
    await prefetchStored(deps, 'run-3', 'ticket_messages', [seed('m1', 7), seed('m3', 9), seed('x', 11)]);
    expect(queries).toHaveLength(1);
    expect([...(takePrefetched('run-3', 'ticket_messages', '7')?.keys() ?? [])]).toEqual(['m1', 'm2']);
    expect([...(takePrefetched('run-3', 'ticket_messages', '9')?.keys() ?? [])]).toEqual(['m3']);
    expect(takePrefetched('run-3', 'ticket_messages', '11')?.size).toBe(0);
  });
});
