import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../activities/deps.js';
import { syncTicketsPages } from '../../activities/tickets.js';
import type { Destination } from '../../connectors/destination.js';
import { encodeStateKey } from '../../schemas/state-key.js';
import { failingStagedWriteAt } from '../support/failing-writes.js';
import { type Pipeline, silentLogger, startPipeline } from './harness.js';

const TICKETS = 750;
const PAGE_SIZE = 100;
const LIST_PAGES = Math.ceil(TICKETS / PAGE_SIZE);
type TicketsRun = Awaited<ReturnType<ReturnType<typeof syncTicketsPages>>>;

/**
 * A run of pages in one activity (activities/sync-page.ts, through the tickets listing) against the
 * companion and PostgreSQL, in Temporal's mock activity context (its heartbeats are what a retried attempt
 * is given): each page committed with its checkpoint, a failed write costing at most the two pages in
 * flight, the reports of the committed pages carried to the retry, and the run's page bound.
 */
describe('a run of list pages in one activity', () => {
  let p: Pipeline;

  beforeAll(async () => {
    p = await startPipeline('e2e_page_run', {
      companion: { seed: 43, tickets: TICKETS, rateLimits: false },
      workers: false,
    });
    await p.deps.destination.prepare();
  }, 120_000);
  afterAll(async () => {
    await p?.close();
  });

  const listRequests = () => p.companion.requestLog.filter((r) => r.path === '/public/v1/tickets').length;
  const depsWith = (destination: Destination): ActivityDeps => ({
    client: p.deps.client,
    destination,
    logger: silentLogger,
  });
  const input = (scope: string, maxPages: number) => ({
    scope,
    stopBelow: null,
    pageSize: PAGE_SIZE,
    threadCutoff: null,
    queueAll: false,
    maxPages,
  });
  const failingAt = (n: number): Destination => failingStagedWriteAt(p.deps.destination, n).destination;

  it('commits page by page; a retry resumes from the last committed page with every report', async () => {
    const scope = encodeStateKey({ kind: 'head_pass', before: '2100-01-01T00:00:00.000Z' }).scope;
    p.companion.clearRequestLog();
    const first = new MockActivityEnvironment();
    let lastBeat: unknown;
    first.on('heartbeat', (d: unknown) => {
      lastBeat = d;
    });
    await expect(first.run(syncTicketsPages(depsWith(failingAt(4))), input(scope, 50))).rejects.toThrow(
      'the warehouse went away',
    );
    const carried = (lastBeat as { progress: { pages: unknown[] } }).progress.pages;
    expect(carried).toHaveLength(3);

    const retry = new MockActivityEnvironment({ heartbeatDetails: lastBeat });
    const run: TicketsRun = await retry.run(syncTicketsPages(depsWith(p.deps.destination)), input(scope, 50));
    expect(run.pages).toHaveLength(LIST_PAGES);
    expect(run.pages.at(-1)?.done).toBe(true);
    expect(run.pages.slice(0, -1).every((r) => !r.done && r.cursorTag !== null)).toBe(true);
    expect(run.pages.reduce((n, r) => n + r.listed, 0)).toBe(TICKETS);
    expect(run.pages.reduce((n, r) => n + r.changed, 0)).toBe(TICKETS);
    // The page whose write failed, and the next one requested while it was written: no more.
    const refetched = listRequests() - LIST_PAGES;
    expect(refetched).toBeGreaterThan(0);
    expect(refetched).toBeLessThanOrEqual(2);
    const stored = await p.db.query<{ n: string }>('SELECT count(*) AS n FROM support.tickets');
    expect(Number(stored.rows[0]?.n)).toBe(TICKETS);
    const checkpoint = await p.deps.destination.readCheckpoint('tickets', scope);
    expect(checkpoint).toMatchObject({ status: 'complete', pages: LIST_PAGES, rows: TICKETS });
  }, 120_000);

  it('hands back at its page bound, without a request past it, and the next run goes on', async () => {
    const scope = encodeStateKey({ kind: 'head_pass', before: '2100-01-02T00:00:00.000Z' }).scope;
    p.companion.clearRequestLog();
    const deps = depsWith(p.deps.destination);
    const bounded: TicketsRun = await new MockActivityEnvironment().run(
      syncTicketsPages(deps),
      input(scope, 3),
    );
    expect(bounded.pages).toHaveLength(3);
    expect(bounded.pages.at(-1)?.done).toBe(false);
    expect(listRequests()).toBe(3);
    const rest: TicketsRun = await new MockActivityEnvironment().run(syncTicketsPages(deps), {
      ...input(scope, 50),
      afterCursorTag: bounded.pages.at(-1)!.cursorTag!,
    });
    expect(rest.pages).toHaveLength(LIST_PAGES - 3);
    expect(rest.pages.at(-1)?.done).toBe(true);
    expect(listRequests()).toBe(LIST_PAGES);
    // Listed again at the same versions: nothing changed.
    expect([...bounded.pages, ...rest.pages].reduce((n, r) => n + r.changed, 0)).toBe(0);
  }, 120_000);
});
