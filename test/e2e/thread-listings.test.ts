import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { THREAD_LISTING } from '../../workflows/threads/queue.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';

/**
 * The thread queue is listed in long listings (workflows/threads/queue.ts THREAD_LISTING): a listing costs the
 * warehouse the same whatever it returns (BigQuery reads the checkpoint tables whole), so a first sync must
 * not list its queue once per `concurrency × 4` threads — 310 whole reads at 20,000 tickets, most of the
 * BigQuery bench's time, and listings that outlasted their minute.
 */
describe('the thread queue, listed by a first sync', () => {
  let p: Pipeline;
  /** What each listing returned (entries). */
  const listings: number[] = [];

  beforeAll(async () => {
    p = await startPipeline('e2e_thread_listings', {
      companion: { seed: 31, tickets: 800, rateLimits: false },
      // One window (P90D): the tickets stream lists it in ⌈tickets / 100⌉ pages.
      env: { SYNC_START_DATE: new Date(Date.now() - 89 * DAY_MS).toISOString() },
      workers: false,
    });
    const list = p.deps.activities.listQueuedThreadCheckpoints;
    p.deps.activities.listQueuedThreadCheckpoints = async (input) => {
      const listed = await list(input);
      listings.push(listed.length);
      return listed;
    };
    await p.startWorkers();
  });
  afterAll(async () => {
    await p?.close();
  });

  it('lists what is queued in one listing per tickets page at most, not one per few lanes', async () => {
    const summary = await p.run('incremental', {}, ['tickets', 'ticket_messages']);
    expect(summary.status).toBe('succeeded');
    const ticketPages = p.companion.requestLog.filter(
      (r) => r.method === 'GET' && r.path === '/public/v1/tickets',
    ).length;
    const threads = new Set(
      p.companion.requestLog
        .filter((r) => r.method === 'GET' && /^\/public\/v1\/tickets\/\d+\/messages$/.test(r.path))
        .map((r) => r.path),
    ).size;
    const listed = listings.reduce((a, n) => a + n, 0);
    const nonEmpty = listings.filter((n) => n > 0).length;
    process.stderr.write(
      `[thread-listings] ${threads} threads, ${ticketPages} tickets pages, listings ${JSON.stringify(listings)}\n`,
    );
    expect(listed).toBe(threads);
    // Short listings (16 lanes × 4 = 64 entries) would need more than the tickets pages allow here.
    expect(Math.ceil(threads / 64)).toBeGreaterThan(ticketPages + 1);
    expect(Math.max(...listings)).toBeLessThanOrEqual(THREAD_LISTING);
    expect(nonEmpty).toBeLessThanOrEqual(ticketPages + 1);
  });
});
