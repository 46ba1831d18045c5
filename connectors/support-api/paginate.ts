/**
 * Pages of every list of the API: single-page fetchers (the pipeline fetches exactly one page per
 * activity) and async iterators built on them (tests, tools, small reference streams).
 *
 * A page carries the cursor that produced it (null for the first) and the next one, so a caller can
 * checkpoint and resume from any page. Iterators detect loops (the same cursor twice throws
 * `CursorLoopError`) and restart from the window's start, with a warning, when the API rejects a cursor
 * (`CursorRejectedError`); they never skip ahead.
 */
import type { z } from 'zod';
import { Agent, DirectoryListQuery, Tag, Team } from '../../schemas/api/directory.js';
import { AgentSession, AgentSessionMeta, CsatMeta, CsatSurvey } from '../../schemas/api/exports.js';
import { Message } from '../../schemas/api/messages.js';
import { MetricCatalogEntry } from '../../schemas/api/reports.js';
import { Ticket } from '../../schemas/api/tickets.js';
import { View } from '../../schemas/api/views.js';
import type { SupportApiClient } from './client.js';
import { CursorLoopError, CursorRejectedError } from './errors.js';
import type { InvalidItem } from './parse.js';

/**
 * One page as fetched. `rawItems[i]` is the JSON object `items[i]` was parsed from; `rejected` are the
 * items that broke what the spec defines (the caller sets them aside and stores the rest).
 */
export interface Page<T, M = undefined> {
  items: T[];
  rawItems: Record<string, unknown>[];
  rejected: InvalidItem[];
  /** The cursor sent to get this page (null for the first page). */
  cursor: string | null;
  nextCursor: string | null;
  hasMore: boolean;
  meta?: M;
}

export interface PageRequest {
  cursor?: string | null;
  limit?: number;
  signal?: AbortSignal;
}

/** An instant with `Z` or an explicit offset (spec 4.13 rule 1, 4.14). Dates are sent as ISO with `Z`. */
export type Instant = string | Date;

function iso(i: Instant): string {
  if (typeof i !== 'string') return i.toISOString();
  if (!/(Z|[+-]\d{2}:\d{2})$/i.test(i) || !Number.isFinite(Date.parse(i))) {
    throw new TypeError(`instant ${JSON.stringify(i)} needs Z or an explicit offset (spec 4.13 rule 1)`);
  }
  return i;
}

type Query = Record<string, string | number | boolean | undefined>;

async function fetchPage<S extends z.ZodType, M extends z.ZodType | undefined = undefined>(
  client: SupportApiClient,
  path: string,
  req: PageRequest,
  query: Query,
  item: S,
  meta?: M,
): Promise<Page<z.infer<S>, M extends z.ZodType ? z.infer<M> : undefined>> {
  const cursor = req.cursor ?? null;
  const page = await client.getPage(
    path,
    { ...query, limit: req.limit, cursor: cursor ?? undefined },
    item,
    meta,
    req.signal,
  );
  const out: Page<z.infer<S>, M extends z.ZodType ? z.infer<M> : undefined> = {
    items: page.items,
    rawItems: page.rawItems,
    rejected: page.rejected,
    cursor,
    nextCursor: page.hasMore ? page.nextCursor : null,
    hasMore: page.hasMore,
  };
  if (page.meta !== undefined) out.meta = page.meta;
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Single-page fetchers

export interface TicketsPageRequest extends PageRequest {
  viewId?: string;
  includeTicketFields?: boolean;
}
/** `GET /tickets` (spec 4.1): newest first (`created_at` desc, then `id` desc). */
export function fetchTicketsPage(
  client: SupportApiClient,
  req: TicketsPageRequest = {},
): Promise<Page<Ticket>> {
  return fetchPage(
    client,
    '/tickets',
    req,
    { view_id: req.viewId, include: req.includeTicketFields ? 'ticket_fields' : undefined },
    Ticket,
  );
}

export interface MessagesPageRequest extends PageRequest {
  ticketNumber: number;
  order?: 'asc' | 'desc';
}
/** `GET /tickets/:ticketNumber/messages` (spec 4.3), oldest first unless `order: 'desc'`. */
export function fetchMessagesPage(
  client: SupportApiClient,
  req: MessagesPageRequest,
): Promise<Page<Message>> {
  if (!Number.isInteger(req.ticketNumber) || req.ticketNumber <= 0) {
    throw new TypeError(`invalid ticket number ${req.ticketNumber}`);
  }
  return fetchPage(
    client,
    `/tickets/${req.ticketNumber}/messages`,
    req,
    { order: req.order ?? 'asc' },
    Message,
  );
}

/** `GET /views` (spec 4.9). */
export function fetchViewsPage(client: SupportApiClient, req: PageRequest = {}): Promise<Page<View>> {
  return fetchPage(client, '/views', req, {}, View);
}

function directoryQuery(req: PageRequest): PageRequest {
  if (req.limit !== undefined) DirectoryListQuery.parse({ limit: req.limit });
  return req;
}
/** `GET /tags` (spec 4.8; page shape our choice, see schemas/api/directory.ts). */
export function fetchTagsPage(client: SupportApiClient, req: PageRequest = {}): Promise<Page<Tag>> {
  return fetchPage(client, '/tags', directoryQuery(req), {}, Tag);
}
/** `GET /teams`. */
export function fetchTeamsPage(client: SupportApiClient, req: PageRequest = {}): Promise<Page<Team>> {
  return fetchPage(client, '/teams', directoryQuery(req), {}, Team);
}
/** `GET /agents`. */
export function fetchAgentsPage(client: SupportApiClient, req: PageRequest = {}): Promise<Page<Agent>> {
  return fetchPage(client, '/agents', directoryQuery(req), {}, Agent);
}

/** `GET /reports/metrics` (spec 4.11): the whole catalog, unpaginated. */
export async function fetchMetricCatalog(client: SupportApiClient): Promise<Page<MetricCatalogEntry>> {
  const { items, rawItems, rejected } = await client.getArray('/reports/metrics', MetricCatalogEntry);
  return { items, rawItems, rejected, cursor: null, nextCursor: null, hasMore: false };
}

export interface CsatPageRequest extends PageRequest {
  /** Which date the window filters on: `submitted` (answered surveys) or `sent` (all, answered or not). */
  by: 'submitted' | 'sent';
  /** Window `[from, before)`, at most 90×24 h (spec 4.13). */
  from: Instant;
  before: Instant;
  includeComments?: boolean;
  creditedAgentId?: string;
  scoreLte?: number;
}
/** `GET /csat-surveys` (spec 4.13): ascending by the chosen date, then `id`. */
export function fetchCsatPage(
  client: SupportApiClient,
  req: CsatPageRequest,
): Promise<Page<CsatSurvey, CsatMeta>> {
  const window =
    req.by === 'submitted'
      ? { submitted_from: iso(req.from), submitted_before: iso(req.before) }
      : { sent_from: iso(req.from), sent_before: iso(req.before) };
  return fetchPage(
    client,
    '/csat-surveys',
    req,
    {
      ...window,
      credited_agent_id: req.creditedAgentId,
      score_lte: req.scoreLte,
      include_comments: req.includeComments === undefined ? undefined : String(req.includeComments),
    },
    CsatSurvey,
    CsatMeta,
  );
}

export interface AgentSessionsPageRequest extends PageRequest {
  /** Window `[from, before)`, at most 90×24 h; records overlapping it are returned (spec 4.14). */
  from: Instant;
  before: Instant;
  agentId?: string;
}
/** `GET /agent-sessions` (spec 4.14): ascending by `session_start`, then `id`. */
export function fetchAgentSessionsPage(
  client: SupportApiClient,
  req: AgentSessionsPageRequest,
): Promise<Page<AgentSession, AgentSessionMeta>> {
  return fetchPage(
    client,
    '/agent-sessions',
    req,
    { from: iso(req.from), before: iso(req.before), agent_id: req.agentId },
    AgentSession,
    AgentSessionMeta,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Iterators

export interface IterateOptions {
  /** Resume from this cursor (a page's `nextCursor`). */
  startCursor?: string | null;
  /** How many times a rejected cursor may restart the crawl from its start (default 3). */
  maxRestarts?: number;
}

interface PaginateOptions extends IterateOptions {
  /** Label for errors and logs, e.g. `GET /public/v1/tickets`. */
  endpoint?: string;
}

/**
 * Crawls a list page by page with `fetch(cursor)`. Same cursor twice → `CursorLoopError`. A rejected
 * cursor → warning, then the crawl restarts from the window's start (null cursor), so the caller sees
 * pages again (upsert by id) rather than missing any; `restarted` on the next page tells it so.
 */
export async function* paginate<T, M>(
  client: SupportApiClient,
  fetch: (cursor: string | null) => Promise<Page<T, M>>,
  options: PaginateOptions = {},
): AsyncGenerator<Page<T, M> & { restarted: boolean }, void, undefined> {
  let cursor: string | null = options.startCursor ?? null;
  let seen = new Set<string>();
  let restarts = 0;
  let restarted = false;
  for (;;) {
    let page: Page<T, M>;
    try {
      page = await fetch(cursor);
    } catch (err) {
      if (err instanceof CursorRejectedError && restarts < (options.maxRestarts ?? 3)) {
        restarts += 1;
        client.logger.warn(
          { endpoint: err.endpoint, requestId: err.apiError.requestId, restarts },
          'cursor rejected by the API: restarting the window from its start (pages will be re-read)',
        );
        cursor = null;
        seen = new Set();
        restarted = true;
        continue;
      }
      throw err;
    }
    yield { ...page, restarted };
    restarted = false;
    if (!page.hasMore || page.nextCursor === null) return;
    if (seen.has(page.nextCursor) || page.nextCursor === cursor) {
      throw new CursorLoopError(options.endpoint ?? 'paginate', page.nextCursor);
    }
    seen.add(page.nextCursor);
    cursor = page.nextCursor;
  }
}

type Without<R, K extends keyof R> = Omit<R, K | 'cursor'>;

export function iterateTickets(
  client: SupportApiClient,
  req: Without<TicketsPageRequest, never> = {},
  options?: IterateOptions,
) {
  return paginate(client, (cursor) => fetchTicketsPage(client, { ...req, cursor }), {
    ...options,
    endpoint: 'GET /public/v1/tickets',
  });
}
export function iterateMessages(
  client: SupportApiClient,
  req: Without<MessagesPageRequest, never>,
  options?: IterateOptions,
) {
  return paginate(client, (cursor) => fetchMessagesPage(client, { ...req, cursor }), {
    ...options,
    endpoint: `GET /public/v1/tickets/${req.ticketNumber}/messages`,
  });
}
export function iterateViews(client: SupportApiClient, req: PageRequest = {}, options?: IterateOptions) {
  return paginate(client, (cursor) => fetchViewsPage(client, { ...req, cursor }), {
    ...options,
    endpoint: 'GET /public/v1/views',
  });
}
export function iterateTags(client: SupportApiClient, req: PageRequest = {}, options?: IterateOptions) {
  return paginate(client, (cursor) => fetchTagsPage(client, { ...req, cursor }), {
    ...options,
    endpoint: 'GET /public/v1/tags',
  });
}
export function iterateTeams(client: SupportApiClient, req: PageRequest = {}, options?: IterateOptions) {
  return paginate(client, (cursor) => fetchTeamsPage(client, { ...req, cursor }), {
    ...options,
    endpoint: 'GET /public/v1/teams',
  });
}
export function iterateAgents(client: SupportApiClient, req: PageRequest = {}, options?: IterateOptions) {
  return paginate(client, (cursor) => fetchAgentsPage(client, { ...req, cursor }), {
    ...options,
    endpoint: 'GET /public/v1/agents',
  });
}
export function iterateCsatSurveys(
  client: SupportApiClient,
  req: Without<CsatPageRequest, never>,
  options?: IterateOptions,
) {
  return paginate(client, (cursor) => fetchCsatPage(client, { ...req, cursor }), {
    ...options,
    endpoint: 'GET /public/v1/csat-surveys',
  });
}
export function iterateAgentSessions(
  client: SupportApiClient,
  req: Without<AgentSessionsPageRequest, never>,
  options?: IterateOptions,
) {
  return paginate(client, (cursor) => fetchAgentSessionsPage(client, { ...req, cursor }), {
    ...options,
    endpoint: 'GET /public/v1/agent-sessions',
  });
}

/** Collects every item of an iterator (tests and small reference lists). */
export async function collectItems<T>(pages: AsyncIterable<Page<T, unknown>>): Promise<T[]> {
  const out: T[] = [];
  for await (const p of pages) out.push(...p.items);
  return out;
}
