import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource } from './warehouse-compare.js';

/**
 * As many failed writes in a row as a thread page's own attempts (workflows/activity-proxies.ts: 6): a page
 * that gave up after its attempts would set the thread aside; a write that is waited for succeeds at the
 * next (after 63 s of backoff — one more refusal would add the backoff's one-minute cap).
 */
const FAILED_WRITES = 6;

/**
 * A thread whose writes the warehouse keeps refusing for a while, while the source answers: the thread is
 * read on patiently until the warehouse takes it, never set aside as a thread the source fails (which left
 * a BigQuery run `incomplete` in CI when the emulator refused a few table reads). The refusal is a
 * PostgreSQL trigger on that ticket's messages that fails its first FAILED_WRITES firings (a sequence
 * counts them: a sequence is not rolled back with the failed statement).
 */
describe('the warehouse refusing one thread’s writes for a while', () => {
  let p: Pipeline;

  beforeAll(async () => {
    p = await startPipeline('e2e_wh_write_failures', { companion: { seed: 31, tickets: 30 } });
  }, 240_000);
  afterAll(async () => {
    await p?.close();
  });

  it('reads the thread on until the warehouse takes it; the run succeeds, exact, no thread failed', async () => {
    expect((await p.run('incremental')).status).toBe('succeeded');
    const world = p.companion.world;
    const victim = world
      .ticketsSorted(world.orgA.id)
      .find((t) => !t.deletedAt && t.ticketType === 'regular' && world.messagesOf(t).length > 0)!;
    expect(victim, 'a ticket with a thread').toBeDefined();
    await p.db.query(`
      CREATE SEQUENCE support.test_refused_writes;
      CREATE FUNCTION support.test_refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF nextval('support.test_refused_writes') <= ${FAILED_WRITES} THEN
          RAISE EXCEPTION 'test: the warehouse refuses this write';
        END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_refuse_write BEFORE INSERT OR UPDATE ON support.ticket_messages
        FOR EACH ROW WHEN (NEW.ticket_id = '${victim.id}') EXECUTE FUNCTION support.test_refuse_write();
    `);
    world.addMessage(victim.number, { role: 'customer', text: 'Still waiting on this one.' });

    const summary = await p.run('incremental');
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    const refused = await p.db.query('SELECT last_value::int AS n FROM support.test_refused_writes');
    expect(refused.rows[0].n, 'every refusal was spent, then the write went through').toBeGreaterThan(
      FAILED_WRITES,
    );
    const failed = await p.db.query(
      `SELECT scope FROM support._sync_state WHERE status = 'failed'
       UNION ALL SELECT ticket_number::text FROM support._thread_queue WHERE status = 'failed'`,
    );
    expect(failed.rows).toEqual([]);
    await p.db.query('DROP TRIGGER test_refuse_write ON support.ticket_messages');
    await expectWarehouseEqualsSource(
      p.db,
      await sourceSnapshot(p.deps.client, new Date(Date.now() - 200 * DAY_MS).toISOString()),
    );
  }, 300_000);
});
