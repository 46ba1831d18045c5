import {
  fetchMetricCatalog,
  type Page,
  planWindows,
  type SupportApiClient,
} from '../../connectors/support-api/index.js';
import type { STREAM_TABLE_NAMES } from '../../schemas/warehouse.js';
import {
  iterateAgentSessions,
  iterateAgents,
  iterateCsatSurveys,
  iterateMessages,
  iterateTags,
  iterateTeams,
  iterateTickets,
  iterateViews,
} from '../support/iterate.js';

type Raw = Record<string, unknown>;

async function rawItems(pages: AsyncIterable<Page<unknown, unknown>>): Promise<Raw[]> {
  const out: Raw[] = [];
  // Everything served, items the connector sets aside included: a warehouse equal to this misses nothing.
  for await (const page of pages) out.push(...page.rawItems, ...page.rejected.map((r) => r.raw as Raw));
  return out;
}

/** Keyed by id, deduplicated (windows overlap for sessions). */
function byId(items: Raw[]): Map<string, Raw> {
  return new Map(items.map((i) => [String(i['id']), i]));
}

/**
 * Everything the API serves to a key, read straight from it with the client's iterators (rate limits off):
 * the truth the warehouse is compared with.
 */
export async function sourceSnapshot(client: SupportApiClient, from: string) {
  const tickets = await rawItems(iterateTickets(client, { limit: 100, includeTicketFields: true }));
  const messages: Raw[] = [];
  for (const t of tickets) {
    messages.push(
      ...(await rawItems(iterateMessages(client, { ticketNumber: Number(t['ticket_number']), limit: 100 }))),
    );
  }
  const windows = planWindows({ from, to: new Date().toISOString() });
  const surveys: Raw[] = [];
  const sessions: Raw[] = [];
  for (const w of windows) {
    surveys.push(
      ...(await rawItems(
        iterateCsatSurveys(client, {
          by: 'sent',
          from: w.windowStart,
          before: w.windowEnd,
          limit: 100,
          includeComments: true,
        }),
      )),
    );
    sessions.push(
      ...(await rawItems(
        iterateAgentSessions(client, { from: w.windowStart, before: w.windowEnd, limit: 100 }),
      )),
    );
  }
  return {
    tickets: byId(tickets),
    ticket_messages: byId(messages),
    csat_surveys: byId(surveys),
    agent_sessions: byId(sessions),
    views: byId(await rawItems(iterateViews(client, { limit: 100 }))),
    tags: byId(await rawItems(iterateTags(client, { limit: 100 }))),
    teams: byId(await rawItems(iterateTeams(client, { limit: 100 }))),
    agents: byId(await rawItems(iterateAgents(client, { limit: 100 }))),
    metric_catalog: byId((await fetchMetricCatalog(client)).rawItems),
  };
}

export type SourceSnapshot = Awaited<ReturnType<typeof sourceSnapshot>>;
/**
 * The tables the source snapshot reads the truth of, one map each. A new stream's table joins them when its
 * snapshot is written here (test/unit/streams.test.ts fails until every stream's table is compared).
 */
export const COMPARED_TABLES = [
  'tickets',
  'ticket_messages',
  'csat_surveys',
  'agent_sessions',
  'views',
  'tags',
  'teams',
  'agents',
  'metric_catalog',
] as const satisfies readonly (keyof SourceSnapshot & (typeof STREAM_TABLE_NAMES)[number])[];
