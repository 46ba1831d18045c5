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
  type Page,
  type SupportApiClient,
} from '../connectors/support-api/index.js';
import type { ExportPass, StreamOfKind } from '../schemas/streams.js';

/** What a page of a whole list (reference streams, tickets) needs besides its cursor. */
export interface ListRead {
  readonly limit: number;
}
/** What a page of an export window needs besides its cursor: the window `[from, before)`. */
export interface WindowRead {
  readonly limit: number;
  readonly from: string;
  readonly before: string;
  /** CSAT only: ask for comments (needs `tickets:read` besides `analytics:read`). */
  readonly includeComments: boolean;
}
/** What a page of a ticket's thread needs besides its cursor. */
export interface ThreadRead {
  readonly ticketNumber: number;
}

/** Streams whose list comes whole in one unpaginated answer: one request per run, whatever the page size. */
export const UNPAGINATED_STREAMS: readonly StreamOfKind<'reference'>[] = ['metric_catalog'];

/** Messages per thread page: the most the API serves (a thread costs one request per this many messages). */
export const THREAD_PAGE_LIMIT = 100;

type Fetcher<R> = (
  client: SupportApiClient,
  read: R,
  cursor: string | null,
) => Promise<Page<unknown, unknown>>;

/** A fetcher for every paged stream of the registry (exports: for every pass), with what its kind reads. */
type PageFetchers = { readonly [S in StreamOfKind<'reference' | 'tickets'>]: Fetcher<ListRead> } & {
  readonly [P in ExportPass]: Fetcher<WindowRead>;
} & { readonly [S in StreamOfKind<'threads'>]: Fetcher<ThreadRead> };

/**
 * The stream-specific part of the page path (activities/sync-page.ts): which endpoint a stream's page
 * comes from, with which parameters. A stream added to the registry (schemas/streams.ts) does not compile
 * until it has its fetcher here.
 */
export const PAGE_FETCHERS = {
  views: (client, read, cursor) => fetchViewsPage(client, { cursor, limit: read.limit }),
  tags: (client, read, cursor) => fetchTagsPage(client, { cursor, limit: read.limit }),
  teams: (client, read, cursor) => fetchTeamsPage(client, { cursor, limit: read.limit }),
  agents: (client, read, cursor) => fetchAgentsPage(client, { cursor, limit: read.limit }),
  // The whole catalog in one unpaginated answer (UNPAGINATED_STREAMS).
  metric_catalog: (client) => fetchMetricCatalog(client),
  tickets: (client, read, cursor) =>
    fetchTicketsPage(client, { cursor, limit: read.limit, includeTicketFields: true }),
  ticket_messages: (client, read, cursor) =>
    fetchMessagesPage(client, {
      ticketNumber: read.ticketNumber,
      cursor,
      limit: THREAD_PAGE_LIMIT,
      order: 'asc',
    }),
  'csat_surveys.sent': (client, read, cursor) =>
    fetchCsatPage(client, { ...window(read, cursor), by: 'sent' }),
  'csat_surveys.submitted': (client, read, cursor) =>
    fetchCsatPage(client, { ...window(read, cursor), by: 'submitted' }),
  agent_sessions: (client, read, cursor) =>
    fetchAgentSessionsPage(client, { from: read.from, before: read.before, limit: read.limit, cursor }),
} satisfies PageFetchers;

function window(read: WindowRead, cursor: string | null) {
  return {
    from: read.from,
    before: read.before,
    limit: read.limit,
    cursor,
    includeComments: read.includeComments,
  };
}
