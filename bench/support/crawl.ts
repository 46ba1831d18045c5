/**
 * The source's own limit: a plain client crawl of a companion world with the concurrency a sync reads it at
 * (tickets pages one after the other, `threadConcurrency` threads at a time, the export windows, the
 * reference lists), which writes nothing; with the lower bound of requests a sync needs for the same world
 * (the pages needed at the maximum page size, 100). bench:pipeline and bench:throughput measure against it.
 */
import pLimit from 'p-limit';
import type { CompanionHandle } from '../../companion/index.js';
import {
  fetchAgentSessionsPage,
  fetchAgentsPage,
  fetchCsatPage,
  fetchMessagesPage,
  fetchMetricCatalog,
  fetchTagsPage,
  fetchTeamsPage,
  fetchTicketsPage,
  fetchViewsPage,
  planWindows,
} from '../../connectors/support-api/index.js';
import { MAX_EXPORT_WINDOW_MS } from '../../schemas/api/exports.js';
import { crawl, pagesAt100, sourceClient, sum } from './harness.js';

export interface CrawlScope {
  /** The sync's SYNC_START_DATE: threads of tickets created since, export windows from it. */
  readonly startDate: string;
  /** Where the export windows end (the run's start). */
  readonly until: string;
  readonly threadConcurrency: number;
  readonly csatIncludeComments: boolean;
}

export interface CrawlResult {
  ms: number;
  rows: number;
  requests: number;
  /** Requests a sync needs at least, per category. */
  bound: Record<'tickets' | 'threads' | 'exports' | 'reference', number>;
  counts: Record<'tickets' | 'messages' | 'surveys' | 'sessions' | 'reference', number>;
}

/** Crawls `companion` (clearing its request log first); its requests are those the log holds afterwards. */
export async function plainCrawl(companion: CompanionHandle, scope: CrawlScope): Promise<CrawlResult> {
  const client = sourceClient(companion);
  try {
    companion.clearRequestLog();
    const started = performance.now();
    const numbers: number[] = [];
    const ticketSizes = await crawl(async (cursor) => {
      const page = await fetchTicketsPage(client, { cursor, limit: 100, includeTicketFields: true });
      for (const t of page.items)
        if (Date.parse(t.created_at) >= Date.parse(scope.startDate)) numbers.push(t.ticket_number);
      return page;
    });
    const limit = pLimit(scope.threadConcurrency);
    const threadSizes = await Promise.all(
      numbers.map((ticketNumber) =>
        limit(async () =>
          sum(await crawl((cursor) => fetchMessagesPage(client, { ticketNumber, cursor, limit: 100 }))),
        ),
      ),
    );
    let surveys = 0;
    let sessions = 0;
    let exportBound = 0;
    for (const w of planWindows({
      from: scope.startDate,
      to: scope.until,
      maxWindowMs: MAX_EXPORT_WINDOW_MS,
    })) {
      const range = { from: w.windowStart, before: w.windowEnd, limit: 100 };
      const s = sum(
        await crawl((cursor) =>
          fetchCsatPage(client, { ...range, cursor, by: 'sent', includeComments: scope.csatIncludeComments }),
        ),
      );
      const a = sum(await crawl((cursor) => fetchAgentSessionsPage(client, { ...range, cursor })));
      surveys += s;
      sessions += a;
      exportBound += pagesAt100(s) + pagesAt100(a);
    }
    const reference = await Promise.all([
      crawl((cursor) => fetchViewsPage(client, { cursor, limit: 100 })),
      crawl((cursor) => fetchTagsPage(client, { cursor, limit: 100 })),
      crawl((cursor) => fetchTeamsPage(client, { cursor, limit: 100 })),
      crawl((cursor) => fetchAgentsPage(client, { cursor, limit: 100 })),
      crawl(() => fetchMetricCatalog(client)),
    ]);
    const ms = performance.now() - started;
    const messages = sum(threadSizes);
    const referenceRows = sum(reference.map(sum));
    return {
      ms,
      rows: numbers.length + messages + surveys + sessions + referenceRows,
      requests: companion.requestLog.length,
      bound: {
        tickets: Math.ceil(sum(ticketSizes) / 100),
        threads: sum(threadSizes.map(pagesAt100)),
        exports: exportBound,
        reference: sum(reference.map((pages) => pagesAt100(sum(pages)))),
      },
      counts: { tickets: numbers.length, messages, surveys, sessions, reference: referenceRows },
    };
  } finally {
    await client.close();
  }
}
