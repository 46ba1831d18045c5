import {
  CursorLoopError,
  fetchAgentSessionsPage,
  fetchAgentsPage,
  fetchCsatPage,
  fetchMessagesPage,
  fetchPageAfter,
  fetchTagsPage,
  fetchTeamsPage,
  fetchTicketsPage,
  fetchViewsPage,
  type Page,
  type PageRequest,
  type SupportApiClient,
} from '../../connectors/support-api/index.js';

/**
 * Whole lists of the API, page by page, for tests, benches and the e2e source snapshot: the sync itself
 * reads its pages through the page path (activities/sync-page.ts), each committed with its checkpoint.
 */

export interface IterateOptions {
  /** Resume from this cursor (a page's `nextCursor`). */
  startCursor?: string | null;
  /** How many times a rejected cursor may restart the crawl from its start (default 3). */
  maxRestarts?: number;
}

interface PaginateOptions extends IterateOptions {
  /** Label for errors, e.g. `GET /public/v1/tickets`. */
  endpoint?: string;
}

/**
 * Crawls a list page by page with `fetch(cursor)`. A cursor that comes round again → `CursorLoopError`. A
 * rejected cursor → warning, then the crawl restarts from the window's start (null cursor), so the caller
 * sees pages again (upsert by id) rather than missing any; `restarted` on the next page tells it so.
 */
export async function* paginate<T, M>(
  client: SupportApiClient,
  fetch: (cursor: string | null) => Promise<Page<T, M>>,
  options: PaginateOptions = {},
): AsyncGenerator<Page<T, M> & { restarted: boolean }, void, undefined> {
  let cursor: string | null = options.startCursor ?? null;
  let seen = new Set<string>();
  let restarts = 0;
  for (;;) {
    const step = await fetchPageAfter(fetch, cursor, (rejection) => {
      if (restarts >= (options.maxRestarts ?? 3)) return false;
      restarts += 1;
      client.logger.warn(
        { endpoint: rejection.endpoint, requestId: rejection.apiError.requestId, restarts },
        'cursor rejected by the API: restarting the window from its start (pages will be re-read)',
      );
      return true;
    });
    if (step.restarted) seen = new Set();
    const { page } = step;
    yield { ...page, restarted: step.restarted };
    if (!page.hasMore || page.nextCursor === null) return;
    if (seen.has(page.nextCursor) || page.nextCursor === step.cursor) {
      throw new CursorLoopError(options.endpoint ?? 'paginate', page.nextCursor);
    }
    seen.add(page.nextCursor);
    cursor = page.nextCursor;
  }
}

/**
 * The iterator over one list, from its single-page fetcher. Its request is optional exactly when the
 * fetcher's is (`R` then includes `undefined`).
 */
function iterator<R extends PageRequest | undefined, T, M>(
  fetchOne: (client: SupportApiClient, req: R) => Promise<Page<T, M>>,
  endpoint: (req: Omit<NonNullable<R>, 'cursor'>) => string,
) {
  type Request = Omit<NonNullable<R>, 'cursor'>;
  type Args = undefined extends R
    ? [req?: Request, options?: IterateOptions]
    : [req: Request, options?: IterateOptions];
  return (client: SupportApiClient, ...[req = {} as Request, options]: Args) =>
    paginate(client, (cursor) => fetchOne(client, { ...req, cursor } as R), {
      ...options,
      endpoint: `GET /public/v1${endpoint(req)}`,
    });
}

export const iterateTickets = iterator(fetchTicketsPage, () => '/tickets');
export const iterateMessages = iterator(fetchMessagesPage, (req) => `/tickets/${req.ticketNumber}/messages`);
export const iterateViews = iterator(fetchViewsPage, () => '/views');
export const iterateTags = iterator(fetchTagsPage, () => '/tags');
export const iterateTeams = iterator(fetchTeamsPage, () => '/teams');
export const iterateAgents = iterator(fetchAgentsPage, () => '/agents');
export const iterateCsatSurveys = iterator(fetchCsatPage, () => '/csat-surveys');
export const iterateAgentSessions = iterator(fetchAgentSessionsPage, () => '/agent-sessions');

/** Collects every item of an iterator. */
export async function collectItems<T>(pages: AsyncIterable<Page<T, unknown>>): Promise<T[]> {
  const out: T[] = [];
  for await (const p of pages) out.push(...p.items);
  return out;
}
