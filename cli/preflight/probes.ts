import { PAGE_FETCHERS } from '../../activities/fetchers.js';
import { fetchTicketsPage, type SupportApiClient } from '../../connectors/support-api/index.js';
import {
  ALL_STREAMS,
  type ExportPass,
  STREAMS,
  type StreamName,
  type StreamOfKind,
} from '../../schemas/streams.js';

/** What the probes share: the client, the run's settings that change a request, and one ticket to read. */
export interface ProbeContext {
  readonly client: SupportApiClient;
  /** CSAT comments are asked for (`include_comments=true` also needs `tickets:read`, spec 4.13). */
  readonly includeComments: boolean;
  /** Saved report queries configured (REPORT_QUERIES): without any, report_snapshots reads nothing. */
  readonly reportQueries: number;
  /** The export probes read the hour before this instant. */
  readonly now: Date;
  /** The newest ticket's number (one ticket page of one, read once); null: the workspace has none yet. */
  ticketNumber(): Promise<number | null>;
}

/**
 * A probe makes the one cheap request a stream's reads depend on, shaped as the run makes it (the stream's
 * own fetcher, a page of one, an export window of an hour), and throws what the source answers. It returns
 * null when the stream is readable, or why it has nothing to read (it is then not refused either).
 */
type Probe = (ctx: ProbeContext) => Promise<string | null>;

const HOUR_MS = 60 * 60 * 1000;

const listProbe =
  (stream: StreamOfKind<'reference'>): Probe =>
  async ({ client }) => {
    await PAGE_FETCHERS[stream](client, { limit: 1 }, null);
    return null;
  };

const exportProbe =
  (pass: ExportPass): Probe =>
  async ({ client, now, includeComments }) => {
    const before = now.toISOString();
    const from = new Date(now.getTime() - HOUR_MS).toISOString();
    await PAGE_FETCHERS[pass](client, { limit: 1, from, before, extras: includeComments }, null);
    return null;
  };

const ticketsProbe: Probe = async (ctx) => {
  await ctx.ticketNumber();
  return null;
};

const threadProbe =
  (stream: StreamOfKind<'threads'>): Probe =>
  async (ctx) => {
    const ticketNumber = await ctx.ticketNumber();
    if (ticketNumber === null) return 'the workspace has no ticket, so no thread, yet';
    await PAGE_FETCHERS[stream](ctx.client, { ticketNumber }, null);
    return null;
  };

const reportProbe: Probe = async ({ client, reportQueries }) => {
  if (reportQueries === 0) return 'no saved report queries (REPORT_QUERIES) to snapshot';
  // The smallest report every agent with report access may run (dashboard.org_metrics).
  await client.queryReport({
    query: ['FROM tickets', 'SHOW new_tickets', 'DURING today', 'VISUALIZE new_tickets TYPE kpi'].join('\n'),
    timezone: 'UTC',
  });
  return null;
};

/** A stream's probe, by its kind; an export is probed by its first pass (the one that reads every item). */
function probeOf(stream: StreamName): Probe {
  const definition = STREAMS[stream];
  switch (definition.kind) {
    case 'reference':
      return listProbe(stream as StreamOfKind<'reference'>);
    case 'tickets':
      return ticketsProbe;
    case 'threads':
      return threadProbe(stream as StreamOfKind<'threads'>);
    case 'export':
      return exportProbe(definition.passes[0] as ExportPass);
    case 'report':
      return reportProbe;
  }
}

/** A probe for every stream of the registry. */
export const STREAM_PROBES: { readonly [S in StreamName]: Probe } = Object.fromEntries(
  ALL_STREAMS.map((stream) => [stream, probeOf(stream)]),
) as { readonly [S in StreamName]: Probe };

/**
 * The context of one preflight: the ticket number is read once, by whichever probe asks first; a read that
 * failed is made again by the next probe (or try) that asks, so a retried probe asks the source again.
 */
export function probeContext(
  client: SupportApiClient,
  options: { includeComments: boolean; reportQueries: number; now: Date },
): ProbeContext {
  let newest: Promise<number | null> | undefined;
  return {
    client,
    ...options,
    ticketNumber() {
      // As the tickets stream's fetcher asks (with the custom fields), a page of one.
      newest ??= fetchTicketsPage(client, { limit: 1, includeTicketFields: true }).then(
        (page) => page.items[0]?.ticket_number ?? null,
        (err: unknown) => {
          newest = undefined;
          throw err;
        },
      );
      return newest;
    },
  };
}
