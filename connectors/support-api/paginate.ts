/**
 * Pages of every list of the API: single-page fetchers (the pipeline fetches exactly one page per
 * activity) and `fetchPageAfter`, which restarts a scope whose cursor the API rejects.
 *
 * A page carries the cursor that produced it (null for the first) and the next one, so a caller can
 * checkpoint and resume from any page. (Iterators over whole lists, for tests and benches, are in
 * test/support/iterate.ts.)
 */
import type { z } from 'zod';
import { Agent, DirectoryListQuery, Tag, Team } from '../../schemas/api/directory.js';
import type { DriftObservation } from '../../schemas/api/drift.js';
import { AgentSession, AgentSessionMeta, CsatMeta, CsatSurvey } from '../../schemas/api/exports.js';
import { Message } from '../../schemas/api/messages.js';
import { MetricCatalogEntry } from '../../schemas/api/reports.js';
import { Ticket } from '../../schemas/api/tickets.js';
import { View } from '../../schemas/api/views.js';
import type { SupportApiClient } from './client.js';
import { CursorRejectedError } from './errors.js';
import type { InvalidItem } from './parse.js';

/**
 * One page as fetched. `rawItems[i]` is the JSON object `items[i]` was parsed from; `rejected` are the
 * items that broke what the spec defines or nest deeper than the warehouse takes (the caller sets them
 * aside and stores the rest).
 */
export interface Page<T, M = undefined> {
  items: T[];
  rawItems: Record<string, unknown>[];
  rejected: InvalidItem[];
  /** Items set aside past the cap a page keeps (MAX_REJECTED_KEPT): counted, not kept. */
  rejectedPastCap: number;
  /** What the stored items hold that their schema does not know (schemas/api/drift.ts). */
  drift: DriftObservation[];
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

export type Query = Record<string, string | number | boolean | undefined>;

/** One page of `GET <path>` with `query`, its items parsed by `item` and its `meta` by `meta`. */
export async function fetchPage<S extends z.ZodType, M extends z.ZodType | undefined = undefined>(
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
    rejectedPastCap: page.rejectedPastCap,
    drift: page.drift,
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
export function fetchMetricCatalog(client: SupportApiClient): Promise<Page<MetricCatalogEntry>> {
  return fetchWholeList(client, '/reports/metrics', MetricCatalogEntry);
}

/** `GET <path>` of an endpoint that answers its whole list in one array: one page, with no cursor. */
export async function fetchWholeList<S extends z.ZodType>(
  client: SupportApiClient,
  path: string,
  item: S,
): Promise<Page<z.infer<S>>> {
  const { items, rawItems, rejected, rejectedPastCap, drift } = await client.getArray(path, item);
  return {
    items,
    rawItems,
    rejected,
    rejectedPastCap,
    drift,
    cursor: null,
    nextCursor: null,
    hasMore: false,
  };
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
    { ...windowQuery(req), agent_id: req.agentId },
    AgentSession,
    AgentSessionMeta,
  );
}

/**
 * The query of an export window `[from, before)` (spec 4.13, 4.14) under the names the endpoint gives it
 * (`from`/`before` unless said otherwise); instants need `Z` or an explicit offset (spec 4.13 rule 1).
 */
export function windowQuery(
  window: { readonly from: Instant; readonly before: Instant },
  names: { readonly from: string; readonly before: string } = { from: 'from', before: 'before' },
): Query {
  return { [names.from]: iso(window.from), [names.before]: iso(window.before) };
}

// ---------------------------------------------------------------------------------------------------------
// Resuming

/**
 * The page after `cursor`. When the API rejects the cursor (`CursorRejectedError`: it expired, or the
 * request changed), `restart` decides what follows: true, the scope's first page instead (`restarted`, the
 * caller re-reads rather than skips); false, the rejection is thrown. The one place a crawl restarts: the
 * page step of every stream (activities/page-step.ts) and the tests' iterators build on it.
 */
export async function fetchPageAfter<P>(
  fetch: (cursor: string | null) => Promise<P>,
  cursor: string | null,
  restart: (rejection: CursorRejectedError) => boolean,
): Promise<{ page: P; cursor: string | null; restarted: boolean }> {
  try {
    return { page: await fetch(cursor), cursor, restarted: false };
  } catch (err) {
    if (!(err instanceof CursorRejectedError) || cursor === null || !restart(err)) throw err;
    return { page: await fetch(null), cursor: null, restarted: true };
  }
}
