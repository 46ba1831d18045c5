import type { RunPlan } from '../activities/bookkeeping.js';
import { readState } from '../activities/checkpoints.js';
import { THREAD_PAGE_LIMIT } from '../activities/fetchers.js';
import { unsettledThreads } from '../activities/threads.js';
import { listingDone, sweepUnderWay, threadsToQueue, versionMovedIds } from '../activities/tickets.js';
import { threadsLongerThan } from '../connectors/queries/threads.js';
import { REVERIFY_ROUND, threadCutoffOf } from '../schemas/child-inputs.js';
import type { SyncMode, SyncSettings } from '../schemas/run-input.js';
import type { SweptPage } from './sweep.js';
import type { ForecastReads } from './warehouse-reads.js';

/** What the tickets and threads of a run will request (list pages, thread pages), and why. */
export interface TicketsForecast {
  /** List pages of the head pass (newest tickets down to the last mark) and of the sweep. */
  headPages: number;
  sweepPages: number;
  /** Tickets those pages list (a ticket listed by both counts once). */
  listed: number;
  threads: {
    /** Threads the listing queues (new or changed tickets, the thread look-back, or all: full refresh). */
    queuedByListing: number;
    /** Threads queued before the run or unsettled (failed, a message in transit or set aside). */
    queuedBefore: number;
    /** The rolling re-read's minimum this run: its one round (REVERIFY_ROUND), as far as threads allow. */
    reverifyMin: number;
    /** Threads the rolling re-read could take while other streams are busy (at most `SYNC_THREAD_REVERIFY_PER_RUN`). */
    reverifyMore: number;
    /** Detail requests of the queued threads (one per page of `THREAD_PAGE_LIMIT` messages). */
    requests: number;
  } | null;
}

/**
 * Counts, on the pages of one sweep, what the run's tickets stream lists and which threads its pages
 * queue, with the run's own decisions (activities/tickets.ts: where a sweep resumes, when a head pass
 * stops, whose thread is queued) against what the warehouse stores; then the threads the run drains.
 */
export async function forecastTickets(input: {
  reads: ForecastReads;
  pages: readonly SweptPage[];
  plan: RunPlan['tickets'];
  mode: SyncMode;
  settings: SyncSettings;
  before: string;
  withThreads: boolean;
}): Promise<TicketsForecast> {
  const { reads, pages, plan, mode, settings } = input;
  let headPages = 0;
  let sweepPages = 0;
  let sweepFrom = 0;
  if (plan?.head) {
    for (const page of pages) {
      headPages += 1;
      if (listingDone({ hasMore: page.hasMore, items: page.tickets }, plan.head.since)) break;
    }
  }
  if (plan?.sweep) {
    // A sweep under way resumes at its page; the list may have shifted a little since (new tickets on top).
    const current = await readState(reads, { kind: 'sweep' });
    const resumeAt = sweepUnderWay(current, plan.sweep.restart)?.resumedAtPage ?? 0;
    sweepFrom = Math.max(0, Math.min(resumeAt, pages.length - 1));
    const budget = plan.sweep.maxPages === null ? Number.POSITIVE_INFINITY : plan.sweep.maxPages - headPages;
    sweepPages = Math.max(0, Math.min(pages.length - sweepFrom, budget));
  }
  const listedPages = [...pages.slice(0, headPages), ...pages.slice(sweepFrom, sweepFrom + sweepPages)];
  const listed = new Map(listedPages.flatMap((p) => p.tickets.map((t) => [t.id, t] as const)));
  if (!input.withThreads) return { headPages, sweepPages, listed: listed.size, threads: null };

  // Whose thread each listed page queues: the run's rule, against the stored versions.
  const rule = {
    threadCutoff: threadCutoffOf(mode, input.before, settings.threadLookbackMs),
    queueAll: plan?.queueAllThreads ?? false,
  };
  const queued = new Set<string>();
  let storedAndQueued = 0;
  for (const page of listedPages) {
    const stored = await reads.storedVersions(
      'tickets',
      page.tickets.map((t) => t.id),
    );
    for (const t of threadsToQueue(page.tickets, versionMovedIds(page.tickets, stored), rule)) {
      if (queued.has(String(t.ticket_number))) continue;
      queued.add(String(t.ticket_number));
      if (stored.has(t.id)) storedAndQueued += 1;
    }
  }
  const queuedByListing = queued.size;
  const unsettled = await unsettledThreads(reads);
  const waiting = await reads.listCheckpoints({ threadQueue: true, status: 'running' });
  for (const scope of [
    ...unsettled.failed.map((c) => c.scope),
    ...unsettled.again,
    ...waiting.map((c) => c.scope),
  ])
    queued.add(scope);

  // The rolling re-read takes threads read before this run, oldest first: one round every run, more only
  // while other streams are busy and at most SYNC_THREAD_REVERIFY_PER_RUN (the caller estimates how many
  // from their wall time), so it never holds the run open beyond that round.
  const reverifying =
    settings.threadReverifyPerRun > 0 && (mode === 'incremental' || mode === 'full_refresh');
  const freshness = await reads.bookkeeping.freshness();
  const readBefore = Math.max(
    0,
    freshness.threads.live - freshness.threads.unread - storedAndQueued - unsettled.again.length,
  );
  const reverifyAll = reverifying ? Math.min(settings.threadReverifyPerRun, readBefore) : 0;
  const reverifyMin = Math.min(REVERIFY_ROUND, reverifyAll);
  const reverifyMore = reverifyAll - reverifyMin;

  const long = await longThreads(reads);
  let requests = reverifyMin;
  for (const scope of queued) requests += long.get(scope) ?? 1;
  return {
    headPages,
    sweepPages,
    listed: listed.size,
    threads: {
      queuedByListing,
      queuedBefore: queued.size - queuedByListing,
      reverifyMin,
      reverifyMore,
      requests,
    },
  };
}

/** Pages of the stored threads longer than one page (ticket number → pages); the others take one. */
async function longThreads(reads: ForecastReads): Promise<Map<string, number>> {
  const messages = await threadsLongerThan(reads, THREAD_PAGE_LIMIT);
  return new Map([...messages].map(([scope, n]) => [scope, Math.ceil(n / THREAD_PAGE_LIMIT)]));
}
