import { CancelledFailure } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restartedCheckpoint } from '../../activities/checkpoints.js';
import type { ActivityDeps } from '../../activities/deps.js';
import { PAGE_FETCHERS } from '../../activities/fetchers.js';
import { COMMIT_PAGES, syncThreadBatch, type ThreadBatchReport } from '../../activities/thread-batch.js';
import { crawl, sum } from '../../bench/support/harness.js';
import type { Destination } from '../../connectors/destination.js';
import { fetchTicketsPage } from '../../connectors/support-api/index.js';
import { threadKeyOf } from '../../schemas/state-key.js';
import { failingStagedWriteAt } from '../support/failing-writes.js';
import { type Pipeline, silentLogger, startPipeline } from './harness.js';

/**
 * The thread batch (activities/thread-batch.ts) against the companion and PostgreSQL, in Temporal's mock
 * activity context (its heartbeats are what a retried attempt is given): group commit, a retry that resumes
 * from the last heartbeat re-fetching at most the pages not committed, exact counts, and the threads it
 * hands back to the page-per-activity path.
 */
describe('a batch of thread pages in one activity', () => {
  let p: Pipeline;
  let numbers: number[];
  /** Pages each thread needs at the companion's page size. */
  let pagesOf: Map<number, number>;
  let messagesOf: Map<number, number>;

  beforeAll(async () => {
    p = await startPipeline('e2e_thread_batch', {
      companion: { seed: 41, tickets: 150, rateLimits: false },
      workers: false,
    });
    await p.deps.destination.prepare();
    const page = await fetchTicketsPage(p.deps.client, { cursor: null, limit: 100 });
    numbers = page.items.map((t) => t.ticket_number).slice(0, 100);
    pagesOf = new Map();
    messagesOf = new Map();
    for (const n of numbers) {
      const sizes = await crawl((cursor) =>
        PAGE_FETCHERS.ticket_messages(p.deps.client, { ticketNumber: n }, cursor),
      );
      pagesOf.set(n, sizes.length);
      messagesOf.set(n, sum(sizes));
    }
  }, 120_000);
  afterAll(async () => {
    await p?.close();
  });

  const queue = (ns: readonly number[]) =>
    p.deps.destination.writeTables(
      [],
      ns.map((n) => restartedCheckpoint(threadKeyOf(String(n)))),
    );
  const threadRequests = () =>
    p.companion.requestLog.filter((r) => /^\/public\/v1\/tickets\/\d+\/messages$/.test(r.path));
  const depsWith = (destination: Destination): ActivityDeps => ({
    client: p.deps.client,
    destination,
    logger: silentLogger,
  });
  const failingAt = (n: number) => failingStagedWriteAt(p.deps.destination, n);

  it('commits many pages per write, and a retry resumes from the last heartbeat with exact counts', async () => {
    const ns = numbers.slice(0, 80);
    await queue(ns);
    const needed = sum(ns.map((n) => pagesOf.get(n)!));
    expect(needed).toBeGreaterThan(2 * COMMIT_PAGES);
    p.companion.clearRequestLog();
    const { destination, calls } = failingAt(3);
    const first = new MockActivityEnvironment();
    let lastBeat: unknown;
    first.on('heartbeat', (d: unknown) => {
      lastBeat = d;
    });
    const threads = ns.map((n) => ({ scope: String(n) }));
    await expect(first.run(syncThreadBatch(depsWith(destination)), { threads })).rejects.toThrow(
      'the warehouse went away',
    );
    // Two commits went through before the third failed: every write held many pages.
    expect(calls()).toBe(3);
    expect((lastBeat as { progress: { pages: number } }).progress.pages).toBeGreaterThanOrEqual(2);

    const retry = new MockActivityEnvironment({ heartbeatDetails: lastBeat });
    const report: ThreadBatchReport = await retry.run(syncThreadBatch(depsWith(p.deps.destination)), {
      threads,
    });
    expect(report.handedBack).toEqual([]);
    expect(report.completed).toBe(ns.length);
    expect(report.pages).toBe(needed);
    expect(report.rows).toBe(sum(ns.map((n) => messagesOf.get(n)!)));
    // What the failed commit held, and the pages read while it was written: at most two commits' worth.
    const refetched = threadRequests().length - needed;
    expect(refetched).toBeGreaterThan(0);
    expect(refetched).toBeLessThanOrEqual(2 * COMMIT_PAGES);

    const stored = await p.db.query<{ ticket_number: number; n: string }>(
      'SELECT ticket_number, count(*) AS n FROM support.ticket_messages WHERE ticket_number = ANY($1) GROUP BY 1',
      [ns],
    );
    expect(Object.fromEntries(stored.rows.map((r) => [r.ticket_number, Number(r.n)]))).toEqual(
      Object.fromEntries(ns.filter((n) => messagesOf.get(n)! > 0).map((n) => [n, messagesOf.get(n)])),
    );
    const entries = await p.deps.destination.listCheckpoints({ threadQueue: true, status: 'running' });
    expect(entries.filter((e) => ns.includes(Number(e.scope)))).toEqual([]);
  }, 120_000);

  it('commits what it read when cancelled, and ends', async () => {
    const ns = numbers.slice(90, 100);
    await queue(ns);
    const env = new MockActivityEnvironment();
    const threadsAsked = new Set<string>();
    const client = p.deps.client;
    // The cancellation arrives with the fifth thread's last page (before the sixth thread is read).
    const cancelling = new Proxy(client, {
      get(t, prop) {
        if (prop === 'getPage') {
          const getPage = t.getPage.bind(t) as (...args: unknown[]) => Promise<unknown>;
          return async (...args: unknown[]) => {
            const thread = String(args[0]).match(/\/tickets\/(\d+)\/messages/)?.[1];
            if (thread !== undefined) threadsAsked.add(thread);
            const page = await getPage(...args);
            if (threadsAsked.size === 5 && (page as { hasMore?: boolean }).hasMore === false) env.cancel();
            return page;
          };
        }
        const v = Reflect.get(t, prop, t);
        return typeof v === 'function' ? v.bind(t) : v;
      },
    });
    await expect(
      env.run(syncThreadBatch({ ...depsWith(p.deps.destination), client: cancelling }), {
        threads: ns.map((n) => ({ scope: String(n) })),
      }),
    ).rejects.toBeInstanceOf(CancelledFailure);
    const running = new Set(
      (await p.deps.destination.listCheckpoints({ threadQueue: true, status: 'running' })).map((e) =>
        Number(e.scope),
      ),
    );
    // The five threads read before the cancellation are committed; the rest wait in the queue.
    expect(ns.filter((n) => !running.has(n))).toEqual(ns.slice(0, 5));
  }, 60_000);

  it('hands back a thread the plain case does not cover, and reads the others', async () => {
    const ns = numbers.slice(80, 90);
    const gone = 9_999_999;
    await queue([...ns, gone]);
    const report: ThreadBatchReport = await new MockActivityEnvironment().run(
      syncThreadBatch(depsWith(p.deps.destination)),
      { threads: [String(gone), ...ns.map(String)].map((scope) => ({ scope })) },
    );
    expect(report.handedBack).toEqual([String(gone)]);
    expect(report.completed).toBe(ns.length);
    // Left for the page path, which knows a ticket gone from the source: still queued here.
    const running = await p.deps.destination.listCheckpoints({ threadQueue: true, status: 'running' });
    expect(running.map((e) => e.scope)).toContain(String(gone));
    expect(running.map((e) => e.scope)).not.toContain(String(ns[0]));
  }, 60_000);
});
