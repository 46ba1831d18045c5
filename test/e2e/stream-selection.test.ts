import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planWindows } from '../../connectors/support-api/index.js';
import { ALL_STREAMS, type StreamName } from '../../schemas/streams.js';
import { iterateAgentSessions } from '../support/iterate.js';
import { type Pipeline, startPipeline } from './harness.js';

/** The endpoints (as the companion logs them) each stream left out here reads. */
const ENDPOINT_OF: Partial<Record<StreamName, RegExp>> = {
  ticket_messages: /^\/public\/v1\/tickets\/\d+\/messages$/,
  csat_surveys: /^\/public\/v1\/csat-surveys$/,
  agent_sessions: /^\/public\/v1\/agent-sessions$/,
};

/** Every row of the tables, every column (`_deleted_at`, `_synced_at`, … included), in a comparable form. */
async function tableStates(p: Pipeline, tables: readonly string[]): Promise<string[][]> {
  const states: string[][] = [];
  for (const table of tables) {
    const { rows } = await p.db.query(`SELECT to_jsonb(t)::text AS row FROM support.${table} t ORDER BY id`);
    states.push(rows.map((r) => r.row));
  }
  return states;
}

/**
 * SYNC_STREAMS: a stream left out is neither read nor flagged deleted, its table is left as it is, what it
 * misses does not make a run incomplete; selected again, it catches up (an export never synced reads its
 * whole history, a ticket deleted meanwhile takes its messages and survey with it).
 */
describe('stream selection (SYNC_STREAMS)', () => {
  let p: Pipeline;
  const requested = (stream: StreamName) =>
    p.companion.requestLog.filter((e) => ENDPOINT_OF[stream]!.test(e.path));

  beforeAll(async () => {
    p = await startPipeline('e2e_stream_selection', {
      companion: { seed: 5, tickets: 40, rateLimits: false },
      env: { SYNC_STREAMS: ALL_STREAMS.filter((s) => s !== 'agent_sessions').join(',') },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('a stream SYNC_STREAMS leaves out is never requested and its table stays empty', async () => {
    expect(p.config.SYNC_STREAMS).not.toContain('agent_sessions');
    p.companion.clearRequestLog();
    const run = await p.run('incremental');
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('succeeded');
    expect(Object.keys(run.streams)).not.toContain('agent_sessions');
    expect(requested('agent_sessions')).toEqual([]);
    // The other streams did run (the check above means something).
    expect(requested('csat_surveys').length).toBeGreaterThan(0);
    expect(requested('ticket_messages').length).toBeGreaterThan(0);
    const { rows } = await p.db.query('SELECT count(*)::int AS n FROM support.agent_sessions');
    expect(rows[0].n).toBe(0);
  });

  let victim: { id: string; ticket_number: number };

  it('streams left out keep their rows and marks when their ticket is deleted, and miss nothing that counts', async () => {
    // A ticket with messages and a survey goes away at the source.
    const found = await p.db.query(
      `SELECT t.id, t.ticket_number FROM support.tickets t
       WHERE t._deleted_at IS NULL
         AND EXISTS (SELECT 1 FROM support.ticket_messages m WHERE m.ticket_id = t.id)
         AND EXISTS (SELECT 1 FROM support.csat_surveys s WHERE s.ticket_id = t.id)
       ORDER BY t.ticket_number LIMIT 1`,
    );
    expect(found.rows).toHaveLength(1);
    victim = { id: found.rows[0].id, ticket_number: Number(found.rows[0].ticket_number) };
    p.companion.world.deleteTicket(victim.ticket_number);
    // What the warehouse is known to miss of streams left out: an item set aside, a failed thread.
    await p.deps.destination.writeTables([
      {
        table: 'agent_sessions',
        rows: [],
        rejected: [
          {
            table: 'agent_sessions',
            itemKey: 'planted',
            itemId: 'planted',
            stream: 'agent_sessions',
            scope: 'planted',
            pageCursor: null,
            reason: 'planted by the test',
            raw: {},
          },
        ],
      },
    ]);
    await p.db.query(
      `UPDATE support._thread_queue SET status = 'failed'
         WHERE ticket_number = (SELECT min(ticket_number) FROM support._thread_queue WHERE status = 'complete')`,
    );
    const left: StreamName[] = ['ticket_messages', 'csat_surveys', 'agent_sessions'];
    const before = await tableStates(p, left);
    expect(before[0]!.length).toBeGreaterThan(0);
    expect(before[1]!.length).toBeGreaterThan(0);

    p.companion.clearRequestLog();
    const run = await p.run(
      'incremental',
      {},
      ALL_STREAMS.filter((s) => !left.includes(s)),
    );
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('succeeded');
    expect(run.missing).toBeUndefined();
    for (const stream of left) expect(requested(stream), stream).toEqual([]);
    // The ticket itself is marked (tickets ran); its messages and survey are not touched.
    const ticket = await p.db.query('SELECT _deleted_at FROM support.tickets WHERE id = $1', [victim.id]);
    expect(ticket.rows[0]._deleted_at).not.toBeNull();
    expect(await tableStates(p, left)).toEqual(before);

    await p.db.query(`DELETE FROM support._rejected WHERE item_key = 'planted'`);
  });

  it('selected again, a stream catches up: an export reads its whole history, deletions reach its rows', async () => {
    p.companion.clearRequestLog();
    const run = await p.run('incremental', {}, [...ALL_STREAMS]);
    expect(run.error).toBeUndefined();
    expect(run.status).toBe('succeeded');
    // Its first window begins at the history's start (SYNC_START_DATE here).
    const windowsFrom = requested('agent_sessions').map((e) => e.query['from']!);
    expect(windowsFrom.sort()[0]).toBe(new Date(p.config.SYNC_START_DATE!).toISOString());

    // Every session the source serves since the start date, none more: the whole history, not a look-back.
    const source = new Set<string>();
    for (const w of planWindows({ from: p.config.SYNC_START_DATE!, to: new Date().toISOString() })) {
      for await (const page of iterateAgentSessions(p.deps.client, {
        from: w.windowStart,
        before: w.windowEnd,
        limit: 100,
      }))
        for (const s of page.items) source.add(s.id);
    }
    const held = await p.db.query('SELECT id FROM support.agent_sessions');
    expect(source.size).toBeGreaterThan(0);
    expect(new Set(held.rows.map((r) => r.id))).toEqual(source);

    // The deleted ticket's messages and survey follow it now.
    for (const table of ['ticket_messages', 'csat_surveys']) {
      const { rows } = await p.db.query(
        `SELECT count(*)::int AS live FROM support.${table} WHERE ticket_id = $1 AND _deleted_at IS NULL`,
        [victim.id],
      );
      expect(rows[0].live, table).toBe(0);
    }
  });
});
