import { describe, expect, it } from 'vitest';
import { cascadeMayChange, deletionMayMark } from '../../connectors/bigquery/deletion-precheck.js';
import { bigQueryDialect } from '../../connectors/bigquery/dialect.js';
import type { BigQuerySession } from '../../connectors/bigquery/session.js';
import { DestinationSettings } from '../../connectors/settings.js';
import { cascadeConditions } from '../../connectors/sql/deletions.js';

/** A session whose table reads answer from `tables` (null: larger than asked), counting what was read. */
function sessionOf(tables: Record<string, Record<string, unknown>[] | null>) {
  const read: string[] = [];
  const session = {
    readTableUpTo: async (table: string) => {
      read.push(table);
      return table in tables ? (tables[table] ?? null) : [];
    },
  } as unknown as BigQuerySession;
  return { session, read };
}

const settings = new DestinationSettings({});
const tickets = settings.spec('tickets');
const messages = settings.spec('ticket_messages');
const since = new Date('2026-11-25T10:00:00.000Z');

describe('deletion pre-check by table reads (connectors/bigquery/deletion-precheck.ts)', () => {
  it('compares _synced_at with since as the script does: microseconds below the millisecond do not count', async () => {
    const at = (synced: string | null, deleted: string | null = null) =>
      sessionOf({ tickets: [{ id: 't1', _synced_at: synced, _deleted_at: deleted }] }).session;
    const notSeen = { kind: 'not_seen_since', since } as const;
    expect(await deletionMayMark(at('2026-11-25T10:00:00.000000Z'), tickets, notSeen)).toBe(false);
    expect(await deletionMayMark(at('2026-11-25T10:00:00.000900Z'), tickets, notSeen)).toBe(false);
    expect(await deletionMayMark(at('2026-11-25T09:59:59.999999Z'), tickets, notSeen)).toBe(true);
    // A deleted row is not a candidate; NULL < since is not true in SQL either.
    expect(await deletionMayMark(at('2026-11-25T09:00:00Z', '2026-11-25T09:30:00Z'), tickets, notSeen)).toBe(
      false,
    );
    expect(await deletionMayMark(at(null), tickets, notSeen)).toBe(false);
  });

  it('a sighting not folded yet spares a row as a later _synced_at would; a range leaves rows outside it out', async () => {
    const rows = [
      { id: 't1', _synced_at: '2026-11-25T09:00:00Z', _deleted_at: null, updated_at: '2026-11-20T00:00:00Z' },
    ];
    const { session } = sessionOf({ tickets: rows });
    const notSeen = { kind: 'not_seen_since', since } as const;
    expect(await deletionMayMark(session, tickets, notSeen)).toBe(true);
    // Seen by a batch merged at `since` (its flush's stamp), or not merged yet (+Infinity).
    expect(await deletionMayMark(session, tickets, notSeen, new Map([['t1', since.getTime()]]))).toBe(false);
    expect(await deletionMayMark(session, tickets, notSeen, new Map([['t1', Infinity]]))).toBe(false);
    expect(await deletionMayMark(session, tickets, notSeen, new Map([['t1', since.getTime() - 1]]))).toBe(
      true,
    );
    expect(await deletionMayMark(session, tickets, notSeen, new Map([['t2', Infinity]]))).toBe(true);
    // A refresh of a range (`updated_at >= from`): the row before it is no candidate; a null column neither.
    const range = (from: string) =>
      ({ ...notSeen, within: { column: 'updated_at', from: new Date(from) } }) as const;
    expect(await deletionMayMark(session, tickets, range('2026-11-21T00:00:00Z'))).toBe(false);
    expect(await deletionMayMark(session, tickets, range('2026-11-20T00:00:00Z'))).toBe(true);
    const nulls = sessionOf({ tickets: [{ ...rows[0], updated_at: null }] }).session;
    expect(await deletionMayMark(nulls, tickets, range('2026-11-01T00:00:00Z'))).toBe(false);
  });

  it('ids: only a live stored id is a candidate; no ids reads nothing; a table too large asks the script', async () => {
    const { session, read } = sessionOf({
      tickets: [
        { id: 'live', _synced_at: '2026-11-25T09:00:00Z', _deleted_at: null },
        { id: 'gone', _synced_at: '2026-11-25T09:00:00Z', _deleted_at: '2026-11-25T09:10:00Z' },
      ],
    });
    expect(await deletionMayMark(session, tickets, { kind: 'ids', ids: ['gone', 'other'] })).toBe(false);
    expect(await deletionMayMark(session, tickets, { kind: 'ids', ids: ['live'] })).toBe(true);
    expect(read).toEqual(['tickets', 'tickets']);
    expect(await deletionMayMark(session, tickets, { kind: 'ids', ids: [] })).toBe(false);
    expect(read).toHaveLength(2);
    const large = sessionOf({ tickets: null }).session;
    expect(await deletionMayMark(large, tickets, { kind: 'not_seen_since', since })).toBeNull();
  });

  it('a cascade: a live child of a deleted parent, or (reviving) a deleted child of a live one', async () => {
    const mark = cascadeConditions(bigQueryDialect('d'), messages, tickets, {
      child: 'ticket_messages',
      foreignKey: 'ticket_id',
      parent: 'tickets',
      revive: false,
    });
    const revive = { ...mark, revive: 'revive' };
    const parents = (deleted: string | null) => [{ id: 'p', _deleted_at: deleted }];
    const child = (deleted: string | null) => [{ ticket_id: 'p', _deleted_at: deleted }];
    const check = (p: string | null, c: string | null, conditions = mark) => {
      const { session, read } = sessionOf({ tickets: parents(p), ticket_messages: child(c) });
      return cascadeMayChange(session, messages, conditions).then((r) => ({ changes: r, read }));
    };
    const x = '2026-11-25T09:00:00Z';
    // No parent deleted, nothing to revive: the child table is not even read.
    expect(await check(null, null)).toEqual({ changes: false, read: ['tickets'] });
    expect(await check(x, null)).toEqual({ changes: true, read: ['tickets', 'ticket_messages'] });
    expect((await check(x, x)).changes).toBe(false);
    expect((await check(null, x)).changes).toBe(false);
    expect((await check(null, x, revive)).changes).toBe(true);
    expect((await check(x, x, revive)).changes).toBe(false);
  });
});
