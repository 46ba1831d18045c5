import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Pipeline, startPipeline } from './harness.js';
import { type RewritingProxy, startRewritingProxy } from './rewriting-proxy.js';

/**
 * Issue 20: changes seen by content, repairs that repair, and a page path that cannot spin. The source is
 * the companion behind a proxy that can make it misbehave.
 */
describe('repairs and guards on the production page path', () => {
  let p: Pipeline;
  let proxy: RewritingProxy;

  beforeAll(async () => {
    proxy = await startRewritingProxy();
    p = await startPipeline('e2e_repairs', {
      companion: { seed: 29, tickets: 60 },
      env: { SUPPORT_API_URL: proxy.url, SYNC_PAGE_SIZE: '10' },
    });
    proxy.target = p.companion.baseUrl;
  });
  afterAll(async () => {
    await p?.close();
    await proxy?.close();
  });

  it('a source that repeats a cursor fails its window with a clear error instead of spinning', async () => {
    // The session export hands back the cursor it was given, forever.
    proxy.rewrite = (path, query, body) => {
      const b = body as { pagination?: { has_more: boolean; next_cursor: string | null } };
      const cursor = query.get('cursor');
      if (path === '/agent-sessions' && cursor && b.pagination?.has_more) b.pagination.next_cursor = cursor;
      return b;
    };
    try {
      const summary = await p.run('incremental');
      expect(summary.status).toBe('failed');
      expect(summary.error).toMatch(/agent_sessions\/[^ ]+: .*cursor/);
      expect(summary.error).toContain('twice');
      expect(summary.streams['agent_sessions']?.status).toBe('failed');
      expect(summary.streams['tickets']?.status).toBe('succeeded');
      expect(summary.streams['csat_surveys.sent']?.status).toBe('succeeded');
    } finally {
      proxy.rewrite = null;
    }
  });

  it('changes the source does not stamp (tags, custom fields, the contact) reach the warehouse by the next run', async () => {
    const baseline = await p.run('incremental');
    expect(baseline.error).toBeUndefined();
    const world = p.companion.world;
    const tickets = world.ticketsSorted(world.orgA.id).filter((t) => !t.deletedAt && t.contactId);
    const [tagged, contacted] = [tickets[4]!, tickets[9]!];
    const readTicket = (id: string) =>
      p.db.query('SELECT updated_at, tags, contact_email FROM support.tickets WHERE id = $1', [id]);
    const stampBefore = (await readTicket(tagged.id)).rows[0].updated_at;
    // Mutated in place: `updated_at` does not move (the spec does not promise it would).
    tagged.tags = [...tagged.tags, 'quietly-added'];
    world.contact(contacted.contactId!)!.email = 'changed.quietly@example.com';
    // A message edited in place (its ticket's `updated_at` stays): the rolling re-read finds it. It reads
    // the threads read longest ago first, at least one round (4 threads) a run, more only while the run's
    // other streams are busy (issue 22): the message is on one of the first round's threads.
    const firstRound = await p.db.query(
      `SELECT q.ticket_number AS scope FROM support._thread_queue q JOIN support.tickets t
        ON t.ticket_number = q.ticket_number AND t._deleted_at IS NULL WHERE q.status = 'complete'
        ORDER BY q.updated_at, q.ticket_number LIMIT 4`,
    );
    const edited = firstRound.rows
      .map((r) => world.ticketByNumber(Number(r.scope)))
      .flatMap((t) => (t ? world.messagesOf(t).filter((m) => m.visibility === 'public') : []))[0]!;
    expect(edited).toBeDefined();
    edited.text = 'edited without a stamp';

    const summary = await p.run('incremental');
    expect(summary.error).toBeUndefined();
    const after = (await readTicket(tagged.id)).rows[0];
    expect(after.tags).toContain('quietly-added');
    expect(after.updated_at).toEqual(stampBefore);
    expect((await readTicket(contacted.id)).rows[0].contact_email).toBe('changed.quietly@example.com');
    const message = await p.db.query('SELECT text FROM support.ticket_messages WHERE id = $1', [edited.id]);
    expect(message.rows[0].text).toBe('edited without a stamp');
  });

  it('a full refresh repairs a row that differs at an equal version, and keeps the messages of a thread it could not read', async () => {
    const world = p.companion.world;
    const tickets = world.ticketsSorted(world.orgA.id).filter((t) => !t.deletedAt);
    const damaged = tickets[2]!;
    // Someone (or an old connector version) left a wrong value at the current version.
    await p.db.query(`UPDATE support.tickets SET subject = 'tampered' WHERE id = $1`, [damaged.id]);
    const failing = tickets.find((t) => world.messagesOf(t).some((m) => m.visibility === 'public'))!;
    const liveMessages = async () =>
      (
        await p.db.query(
          'SELECT count(*)::int AS n FROM support.ticket_messages WHERE ticket_number = $1 AND _deleted_at IS NULL',
          [failing.number],
        )
      ).rows[0].n as number;
    const liveBefore = await liveMessages();
    expect(liveBefore).toBeGreaterThan(0);
    // Its thread answers a permanent error during the refresh.
    p.companion.setOptions({
      faults: {
        rate: 0,
        kinds: [],
        reject: [
          {
            path: `/tickets/${failing.number}/messages`,
            status: 400,
            code: 'VALIDATION_ERROR',
            message: 'no',
          },
        ],
      },
    });
    try {
      const summary = await p.run('full_refresh');
      // The run says data is missing: a failed thread never reads as success.
      expect(summary.status).toBe('incomplete');
      expect(summary.missing?.failedThreads).toBe(1);
      expect(summary.missing?.summary).toMatch(/1 thread failed/);
    } finally {
      p.companion.setOptions({ faults: undefined });
    }
    expect(await liveMessages()).toBe(liveBefore);
    const repaired = await p.db.query('SELECT subject FROM support.tickets WHERE id = $1', [damaged.id]);
    expect(repaired.rows[0].subject).toBe(damaged.subject);

    // The next run reads the failed thread again and the run is whole.
    const next = await p.run('incremental');
    expect(next.status).toBe('succeeded');
    expect(next.missing).toBeUndefined();
  });
});
