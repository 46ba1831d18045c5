import { describe, expect, it } from 'vitest';
import { PAGE_FETCHERS } from '../../activities/fetchers.js';
import type { SupportApiClient } from '../../connectors/support-api/client.js';
import { pathOf } from '../../connectors/support-api/stream-pages.js';

/** A client that records the request a fetcher makes instead of sending it. */
function recordingClient() {
  const requests: { path: string; query: Record<string, unknown> }[] = [];
  const client = {
    getPage: async (path: string, query: Record<string, unknown>) => {
      requests.push({ path, query });
      return {
        items: [],
        rawItems: [],
        rejected: 0,
        rejectedPastCap: 0,
        drift: [],
        hasMore: false,
        nextCursor: null,
      };
    },
  } as unknown as SupportApiClient;
  return { client, requests };
}

describe("a stream's page, declared: the request derives from its endpoint", () => {
  it('fills a :name segment from the read and refuses what is not a number or a name', () => {
    expect(pathOf('GET /tickets/:ticketNumber/messages', { ticketNumber: 42 })).toBe('/tickets/42/messages');
    expect(pathOf('GET /things/:id', { id: 'a/b' })).toBe('/things/a%2Fb');
    for (const ticketNumber of [0, -1, 1.5, Number.NaN, '', undefined])
      expect(() => pathOf('GET /tickets/:ticketNumber/messages', { ticketNumber })).toThrow(
        /GET \/tickets\/:ticketNumber\/messages: invalid ticketNumber/,
      );
    expect(() => pathOf('POST /reports/query', {})).toThrow(/GET only/);
  });

  it("asks a thread's page with the stream's own limit and order, a window under the endpoint's names", async () => {
    const { client, requests } = recordingClient();
    await PAGE_FETCHERS.ticket_messages(client, { ticketNumber: 7 }, 'c1');
    await PAGE_FETCHERS['csat_surveys.sent'](
      client,
      { limit: 50, from: '2026-01-01T00:00:00.000Z', before: '2026-02-01T00:00:00.000Z', extras: false },
      null,
    );
    await PAGE_FETCHERS.tickets(client, { limit: 100 }, null);
    expect(requests).toEqual([
      { path: '/tickets/7/messages', query: { order: 'asc', limit: 100, cursor: 'c1' } },
      {
        path: '/csat-surveys',
        query: {
          sent_from: '2026-01-01T00:00:00.000Z',
          sent_before: '2026-02-01T00:00:00.000Z',
          include_comments: 'false',
          limit: 50,
          cursor: undefined,
        },
      },
      { path: '/tickets', query: { include: 'ticket_fields', limit: 100, cursor: undefined } },
    ]);
  });

  it('refuses a page larger than the endpoint serves before any request', async () => {
    const { client, requests } = recordingClient();
    await expect(PAGE_FETCHERS.tags(client, { limit: 10_000 }, null)).rejects.toThrow(
      /GET \/tags: a page of 10000 items is more than the \d+ it serves/,
    );
    expect(requests).toEqual([]);
  });
});
