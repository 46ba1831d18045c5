/**
 * The peer of the budget benches: a plain sequential page loop over the same streams and windows a sync
 * reads, with the project's own client — one request after another, the way dlt's `rest_api` source
 * works. Its governor does not pace (every class is `pacedElsewhere`, and nothing else paces it): a request
 * goes as soon as the previous one answered, a window's budget spent waits for the window's reset (what a
 * loop retrying a 429 at `Retry-After` does, minus the 429). It writes nothing, so it is a lower bar than
 * dlt into DuckDB.
 */
import pino from 'pino';
import { PAGE_FETCHERS } from '../../activities/fetchers.js';
import type { CompanionHandle } from '../../companion/index.js';
import {
  type Page,
  planWindows,
  RateGovernor,
  ROUTE_CLASSES,
  SupportApiClient,
} from '../../connectors/support-api/index.js';
import { Secret } from '../../schemas/secret.js';
import { EXPORT_PASSES, EXPORT_STREAMS, REFERENCE_STREAMS, type StreamName } from '../../schemas/streams.js';

export interface PeerRead {
  streams: readonly StreamName[];
  /** Where the export windows start (the sync's SYNC_START_DATE). */
  exportsFrom: string;
  /** Export window length (the sync's SYNC_WINDOW). */
  windowMs: number;
}

/** Reads every page of `read`'s streams from `companion`, sequentially; resolves with the wall time (ms). */
export async function pageLoopPeer(companion: CompanionHandle, read: PeerRead): Promise<number> {
  const client = new SupportApiClient({
    baseUrl: companion.baseUrl,
    apiKey: new Secret(companion.keys.admin),
    logger: pino({ level: 'error' }),
    governor: new RateGovernor({ pacedElsewhere: ROUTE_CLASSES }),
    retry: { maxRateLimitRetries: 1000 },
  });
  const started = performance.now();
  const all = async (page: (cursor: string | null) => Promise<Page<unknown, unknown>>) => {
    const items: unknown[] = [];
    let cursor: string | null = null;
    for (;;) {
      const p = await page(cursor);
      items.push(...p.items);
      if (!p.hasMore) return items;
      cursor = p.nextCursor;
    }
  };
  try {
    const wanted = (s: StreamName) => read.streams.includes(s);
    for (const s of REFERENCE_STREAMS)
      if (wanted(s)) await all((c) => PAGE_FETCHERS[s](client, { limit: 100 }, c));
    if (wanted('tickets')) {
      const tickets = (await all((c) => PAGE_FETCHERS.tickets(client, { limit: 100 }, c))) as {
        ticket_number: number;
      }[];
      if (wanted('ticket_messages'))
        for (const t of tickets)
          await all((c) => PAGE_FETCHERS.ticket_messages(client, { ticketNumber: t.ticket_number }, c));
    }
    const windows = planWindows({
      from: read.exportsFrom,
      to: new Date().toISOString(),
      maxWindowMs: read.windowMs,
    });
    for (const stream of EXPORT_STREAMS) {
      if (!wanted(stream)) continue;
      for (const pass of EXPORT_PASSES[stream])
        for (const w of windows)
          await all((c) =>
            PAGE_FETCHERS[pass](
              client,
              { limit: 100, from: w.windowStart, before: w.windowEnd, extras: true },
              c,
            ),
          );
    }
    return performance.now() - started;
  } finally {
    await client.close();
  }
}
