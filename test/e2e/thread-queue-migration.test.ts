import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Pipeline, startPipeline } from './harness.js';

/**
 * A warehouse whose thread queue is rows of `_sync_state` (stream `ticket_messages`, scope the ticket
 * number), as the sync kept it before `_thread_queue`: prepare() moves the rows, and the next run reads the
 * threads they queued.
 */
describe('thread queue of an existing warehouse', () => {
  let p: Pipeline;
  beforeAll(async () => {
    p = await startPipeline('e2e_thread_queue_migration', {
      companion: { seed: 7, tickets: 30, rateLimits: false },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('is moved into _thread_queue by prepare(), and a sync afterwards reads the threads it queued', async () => {
    const first = await p.run('incremental');
    expect(first.status).toBe('succeeded');
    const { rows: picked } = await p.db.query<{ ticket_number: number }>(
      `SELECT DISTINCT m.ticket_number FROM support.ticket_messages m ORDER BY 1 LIMIT 3`,
    );
    expect(picked).toHaveLength(3);
    const numbers = picked.map((r) => Number(r.ticket_number));
    // The old layout: every queue entry a _sync_state row; three threads queued to read again, their
    // messages gone from the warehouse (so only a read brings them back).
    await p.db.query(`INSERT INTO support._sync_state (stream, scope, cursor, high_water_mark, status, pages, rows, updated_at)
      SELECT 'ticket_messages', ticket_number::text, cursor, high_water_mark, status, pages, rows, updated_at
      FROM support._thread_queue`);
    await p.db.query('DELETE FROM support._thread_queue');
    await p.db.query(
      `UPDATE support._sync_state SET status = 'running', cursor = NULL, pages = 0, rows = 0
       WHERE stream = 'ticket_messages' AND scope = ANY($1::text[])`,
      [numbers.map(String)],
    );
    await p.db.query('DELETE FROM support.ticket_messages WHERE ticket_number = ANY($1::bigint[])', [
      numbers,
    ]);
    const entries = Number(
      (await p.db.query(`SELECT count(*) AS n FROM support._sync_state WHERE stream = 'ticket_messages'`))
        .rows[0].n,
    );
    expect(entries).toBeGreaterThan(3);

    await p.deps.destination.prepare();
    const queue = await p.db.query(
      `SELECT ticket_number, status FROM support._thread_queue ORDER BY ticket_number`,
    );
    expect(queue.rows).toHaveLength(entries);
    expect(queue.rows.filter((r) => r.status === 'running').map((r) => Number(r.ticket_number))).toEqual(
      numbers,
    );
    const left = await p.db.query(
      `SELECT count(*)::int AS n FROM support._sync_state WHERE stream = 'ticket_messages'`,
    );
    expect(left.rows[0].n).toBe(0);

    const next = await p.run('incremental');
    expect(next.status).toBe('succeeded');
    const read = await p.db.query(
      `SELECT q.ticket_number, q.status, (SELECT count(*)::int FROM support.ticket_messages m
         WHERE m.ticket_number = q.ticket_number) AS messages
       FROM support._thread_queue q WHERE q.ticket_number = ANY($1::bigint[]) ORDER BY 1`,
      [numbers],
    );
    for (const r of read.rows) {
      expect(r.status).toBe('complete');
      expect(r.messages).toBeGreaterThan(0);
    }
  });
});
