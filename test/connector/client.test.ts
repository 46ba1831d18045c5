import { inspect } from 'node:util';
import pino from 'pino';
import { Dispatcher, errors as undiciErrors } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { SupportApiClient } from '../../connectors/support-api/client.js';
import type { Clock } from '../../connectors/support-api/clock.js';
import {
  CursorRejectedError,
  isRetryable,
  RateLimitedError,
  ResponseFormatError,
  retryDelayMs,
  SchemaViolationError,
  SupportApiError,
  TransportError,
} from '../../connectors/support-api/errors.js';
import { fetchTicketsPage } from '../../connectors/support-api/paginate.js';
import { RateGovernor } from '../../connectors/support-api/rate-governor.js';
import { Secret } from '../../schemas/secret.js';
import { WritingApiClient } from '../support/api-writes.js';
import { collectItems, iterateTickets } from '../support/iterate.js';
import { json, type StubHandler, startStub } from './support/stub-server.js';

const KEY = 'sk_test_SUPERSECRETKEY_0123456789';

function ticket(i: number) {
  return {
    id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
    ticket_number: 1000 + i,
    subject: `t${i}`,
    status: 'open',
    priority: 'medium',
    channel: 'email',
    created_at: '2025-01-01T00:00:00.000Z',
    updated_at: '2025-01-01T00:00:00.000Z',
    tags: [],
    contact: null,
    ticket_type: 'regular',
    parent_ticket_id: null,
    assignee_id: null,
    team_id: null,
    language: null,
    is_spam: false,
    resolved_at: null,
  };
}
const page = (items: unknown[], next: string | null) => ({
  success: true,
  data: items,
  pagination: { has_more: next !== null, next_cursor: next },
});
const errorBody = (code: string, message = 'nope') => ({
  success: false,
  code,
  message,
  request_id: 'req_1',
});

/**
 * Virtual time for the client and its governor: a sleep returns at once and moves the clock on by its length,
 * so a test that waits out a Retry-After or a retry's backoff checks how long it waited without waiting.
 */
class InstantClock implements Clock {
  #now = Date.parse('2025-01-01T00:00:00Z');
  now(): number {
    return this.#now;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (ms > 0) this.#now += ms;
  }
}

/**
 * A dispatcher whose requests all end as undici ends a request whose server sends no headers within
 * `headersTimeout` — at once instead of after the timeout. Records the timeout each request was given.
 */
class HeadersNeverArrive extends Dispatcher {
  readonly headersTimeouts: (number | null | undefined)[] = [];
  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    this.headersTimeouts.push(options.headersTimeout);
    queueMicrotask(() => handler.onError?.(new undiciErrors.HeadersTimeoutError()));
    return true;
  }
}

let stop: (() => Promise<void>) | undefined;
let client: WritingApiClient | undefined;
afterEach(async () => {
  await client?.close();
  await stop?.();
  client = undefined;
  stop = undefined;
});

async function setup(
  handler: StubHandler,
  opts: Partial<ConstructorParameters<typeof SupportApiClient>[0]> = {},
) {
  const stub = await startStub(handler);
  stop = stub.stop;
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
  // Retry backoffs and rate-limit waits pass on this clock, not in real time.
  const clock = new InstantClock();
  client = new WritingApiClient({
    baseUrl: stub.baseUrl,
    apiKey: new Secret(KEY),
    logger,
    governor: new RateGovernor({ clock }),
    clock,
    ...opts,
  });
  return { stub, client, lines, clock };
}

function expectNoKey(...texts: unknown[]) {
  for (const t of texts) {
    const s = typeof t === 'string' ? t : `${String(t)} ${JSON.stringify(t)} ${inspect(t, { depth: 5 })}`;
    expect(s).not.toContain(KEY);
  }
}

describe('client transport and envelope', () => {
  it('sends cx-api-key, the /public/v1 prefix and JSON bodies; parses a typed page', async () => {
    const { stub, client } = await setup((req, res) => {
      if (req.method === 'POST')
        json(res, 201, {
          success: true,
          data: { id: 'tag_1', name: 'vip', created_at: '2025-01-01T00:00:00Z' },
        });
      else json(res, 200, page([ticket(1)], null));
    });
    const p = await fetchTicketsPage(client, { limit: 10, includeTicketFields: true });
    expect(p.items[0]!.ticket_number).toBe(1001);
    expect(p.rawItems[0]).toEqual(ticket(1));
    expect(p).toMatchObject({ cursor: null, nextCursor: null, hasMore: false });
    const tag = await client.createTag({ name: 'vip' });
    expect(tag.name).toBe('vip');
    expect(stub.requests[0]!.url).toBe('/public/v1/tickets?include=ticket_fields&limit=10');
    expect(stub.requests[0]!.headers['cx-api-key']).toBe(KEY);
    expect(stub.requests[1]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(stub.requests[1]!.body)).toEqual({ name: 'vip' });
  });

  it('health sends no key', async () => {
    const { stub, client } = await setup((_req, res) =>
      json(res, 200, { success: true, data: { status: 'ok', version: 'v1', time: '2025-01-01T00:00:00Z' } }),
    );
    expect((await client.health()).status).toBe('ok');
    expect(stub.requests[0]!.headers['cx-api-key']).toBeUndefined();
  });

  it('an error envelope becomes SupportApiError (not retried for 4xx)', async () => {
    const { stub, client } = await setup((_req, res) => json(res, 404, errorBody('TICKET_NOT_FOUND')));
    const err = await client.getTicket(5).catch((e) => e);
    expect(err).toBeInstanceOf(SupportApiError);
    expect(err).toMatchObject({
      status: 404,
      code: 'TICKET_NOT_FOUND',
      requestId: 'req_1',
      endpoint: 'GET /public/v1/tickets/5',
    });
    expect(isRetryable(err)).toBe(false);
    expect(stub.requests).toHaveLength(1);
  });

  it('retries 5xx on reads and succeeds', async () => {
    const { stub, client } = await setup((_req, res, n) =>
      n < 3 ? json(res, 503, errorBody('SERVICE_UNAVAILABLE')) : json(res, 200, page([ticket(1)], null)),
    );
    const p = await fetchTicketsPage(client);
    expect(p.items).toHaveLength(1);
    expect(stub.requests).toHaveLength(3);
  });

  it('an HTML proxy page is a retryable ResponseFormatError naming the endpoint', async () => {
    const { stub, client } = await setup(
      (_req, res) => {
        res.writeHead(502, { 'content-type': 'text/html' });
        res.end('<html><head><title>502 Bad Gateway</title></head></html>');
      },
      { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 } },
    );
    const err = await fetchTicketsPage(client).catch((e) => e);
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect(err.message).toMatch(/GET \/public\/v1\/tickets: HTTP 502 .*HTML/);
    expect(isRetryable(err)).toBe(true);
    expect(stub.requests).toHaveLength(2);
  });

  it('truncated JSON is reported as such', async () => {
    const { client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"success":true,"data":[{"id":');
      },
      { retry: { maxAttempts: 1 } },
    );
    const err = await fetchTicketsPage(client).catch((e) => e);
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect(err.message).toMatch(/invalid or truncated JSON/);
  });

  it("a truncated page's error shows the body's structure, never the items' text (personal data)", async () => {
    const { client } = await setup(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          '{"success":true,"data":[{"id":"t-1","contact":{"email":"jane.doe@example.com","phone":"+33 6 12',
        );
      },
      { retry: { maxAttempts: 1 } },
    );
    const err = await fetchTicketsPage(client).catch((e) => e);
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect(err.message).toContain(
      '{\\"success\\":true,\\"data\\":[{\\"id\\":\\"…\\",\\"contact\\":{\\"email\\":\\"…\\"',
    );
    for (const plain of ['jane.doe@example.com', '+33 6 12', 't-1']) expect(err.message).not.toContain(plain);
  });

  it('a connection reset is a retryable TransportError, retried', async () => {
    const { stub, client } = await setup((_req, res, n) => {
      if (n === 1) res.socket?.destroy();
      else json(res, 200, page([], null));
    });
    await fetchTicketsPage(client);
    expect(stub.requests).toHaveLength(2);
  });

  it('a headers timeout is a TransportError of kind timeout', async () => {
    // The timeout itself is undici's (its timers tick every half second: a real one costs about a second).
    // What is the client's: it gives undici the configured timeout, and reads undici's error as a timeout.
    const dispatcher = new HeadersNeverArrive();
    const { stub, client } = await setup((_req, res) => json(res, 200, page([], null)), {
      timeouts: { headersMs: 100 },
      retry: { maxAttempts: 1 },
      dispatcher,
    });
    const err = await fetchTicketsPage(client).catch((e) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect(err.kind).toBe('timeout');
    expect(isRetryable(err)).toBe(true);
    expect(dispatcher.headersTimeouts).toEqual([100]);
    expect(stub.requests).toHaveLength(0);
  });

  it('an item that breaks a strict rule is set aside with its index, id and field; the rest of the page is returned; not retried', async () => {
    const bad = { ...ticket(2), status: 'weird' };
    const { stub, client } = await setup((_req, res) => json(res, 200, page([ticket(1), bad], null)));
    const result = await fetchTicketsPage(client);
    expect(result.items.map((t) => t.id)).toEqual([ticket(1).id]);
    expect(result.rejected).toHaveLength(1);
    expect(result.rejected[0]).toMatchObject({ index: 1, itemId: bad.id, raw: bad });
    expect(result.rejected[0]!.reason).toMatch(/^status: /);
    expect(stub.requests).toHaveLength(1);
  });

  it('a broken envelope is still a schema violation: not retried', async () => {
    const { stub, client } = await setup((_req, res) =>
      json(res, 200, { success: true, data: [ticket(1)], pagination: { has_more: 'yes' } }),
    );
    const err = await fetchTicketsPage(client).catch((e) => e);
    expect(err).toBeInstanceOf(SchemaViolationError);
    expect(err.message).toContain('pagination.has_more');
    expect(isRetryable(err)).toBe(false);
    expect(stub.requests).toHaveLength(1);
  });

  it('a write without an idempotency key is not retried after a 5xx; with one it is', async () => {
    const msg = {
      id: '00000000-0000-4000-8000-000000000099',
      ticket_id: ticket(1).id,
      ticket_number: 1001,
      role: 'agent',
      direction: 'outbound',
      text: 'hi',
      channel: 'email',
      author_name: 'A',
      status: 'queued',
      created_at: '2025-01-01T00:00:00Z',
      attachments: [],
    };
    const { stub, client } = await setup((_req, res, n) =>
      n % 2 === 1
        ? json(res, 500, errorBody('INTERNAL_ERROR'))
        : json(res, 201, { success: true, data: msg }),
    );
    await expect(client.sendMessage(1001, { body: 'hi' })).rejects.toBeInstanceOf(SupportApiError);
    expect(stub.requests).toHaveLength(1);
    const sent = await client.sendMessage(1001, { body: 'hi' }, { idempotencyKey: 'idem-1' });
    expect(sent.id).toBe(msg.id);
    expect(stub.requests[1]!.headers['idempotency-key']).toBe('idem-1');
  });

  it('waits out a 429 (Retry-After) in wait mode; throws RateLimitedError in throw mode', async () => {
    const handler: StubHandler = (_req, res, n) =>
      n === 1
        ? json(res, 429, { ...errorBody('RATE_LIMIT_EXCEEDED'), retry_after: 1 }, { 'retry-after': '1' })
        : json(res, 200, page([], null));
    const { stub, client, clock } = await setup(handler);
    const t0 = clock.now();
    await fetchTicketsPage(client);
    // The second request went out only after Retry-After (1 s) had passed on the client's clock.
    expect(clock.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(stub.requests).toHaveLength(2);
    await client.close();
    await stop?.();
    const second = await setup(handler, { rateLimitMode: 'throw' });
    const err = await fetchTicketsPage(second.client).catch((e) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err.retryAfterMs).toBe(1000);
    expect(retryDelayMs(err)).toBe(1000);
    expect(err.apiError.code).toBe('RATE_LIMIT_EXCEEDED');
  });

  it('a 400 on a request with a cursor is CursorRejectedError; the iterator restarts from the start', async () => {
    let rejected = false;
    const { stub, client, lines } = await setup((req, res) => {
      const u = new URL(req.url, 'http://x');
      const cursor = u.searchParams.get('cursor');
      if (cursor === null) json(res, 200, page([ticket(1)], 'c1'));
      else if (cursor === 'c1' && !rejected) {
        rejected = true;
        json(res, 400, errorBody('VALIDATION_ERROR', 'invalid cursor'));
      } else json(res, 200, page([ticket(2)], null));
    });
    const err = await fetchTicketsPage(client, { cursor: 'c1' }).catch((e) => e);
    expect(err).toBeInstanceOf(CursorRejectedError);
    expect(err.cursor).toBe('c1');
    rejected = false;
    const pages = [];
    for await (const p of iterateTickets(client)) pages.push(p);
    expect(pages.map((p) => [p.cursor, p.restarted, p.items.map((t) => t.ticket_number)])).toEqual([
      [null, false, [1001]],
      [null, true, [1001]],
      ['c1', false, [1002]],
    ]);
    expect(lines.some((l) => l.includes('cursor rejected'))).toBe(true);
    expect(stub.requests.length).toBe(5); // 1 direct + 4 by the iterator
  });

  it('the same cursor twice throws instead of looping', async () => {
    const { client } = await setup((_req, res) => json(res, 200, page([ticket(1)], 'same')));
    await expect(collectItems(iterateTickets(client))).rejects.toThrow(/twice/);
  });

  it('never leaks the key: errors, their JSON, inspect, logs, the client object', async () => {
    const { client, lines } = await setup(
      (_req, res, n) => {
        if (n === 1) json(res, 401, errorBody('INVALID_API_KEY', `key ${KEY} is invalid`));
        else if (n === 2) {
          res.writeHead(502, { 'content-type': 'text/html' });
          res.end(`<html>${KEY}</html>`);
        } else
          json(res, 200, {
            success: true,
            data: [{ id: KEY }],
            pagination: { has_more: KEY, next_cursor: null },
          });
      },
      { retry: { maxAttempts: 1 } },
    );
    const errors = [
      await client.getTicket(1).catch((e) => e),
      await fetchTicketsPage(client).catch((e) => e),
      await fetchTicketsPage(client).catch((e) => e),
    ];
    expect(errors[0]).toBeInstanceOf(SupportApiError);
    expect(errors[1]).toBeInstanceOf(ResponseFormatError);
    expect(errors[2]).toBeInstanceOf(SchemaViolationError);
    for (const e of errors) expectNoKey(e, e.message, e.stack);
    // An item set aside carries the key only scrubbed (a broken server echoing it in an id).
    const echoed = await setup((_req, res) =>
      json(res, 200, {
        success: true,
        data: [{ id: KEY }],
        pagination: { has_more: false, next_cursor: null },
      }),
    );
    const setAside = await fetchTicketsPage(echoed.client);
    expect(setAside.rejected).toHaveLength(1);
    expectNoKey(setAside.rejected, ...echoed.lines);
    expectNoKey(client, ...lines);
    expect(lines.length).toBeGreaterThan(0);
  });
});

describe('describeFailure (for Temporal ApplicationFailure)', () => {
  it('gives type, retryability, delay, code and request id', async () => {
    const { describeFailure } = await import('../../connectors/support-api/errors.js');
    const api429 = new SupportApiError({
      endpoint: 'GET /public/v1/csat-surveys',
      status: 429,
      code: 'RATE_LIMIT_EXCEEDED',
      message: 'slow down',
      requestId: 'req_9',
      retryAfterSeconds: 3,
    });
    const limited = new RateLimitedError({
      endpoint: api429.endpoint,
      routeClass: 'analytics',
      retryAfterMs: 3000,
      reason: '429 from server',
      apiError: api429,
    });
    expect(describeFailure(limited)).toMatchObject({
      type: 'RateLimited',
      retryable: true,
      nextRetryDelayMs: 3000,
      code: 'RATE_LIMIT_EXCEEDED',
      requestId: 'req_9',
    });
    const forbidden = new SupportApiError({
      endpoint: 'GET /public/v1/agent-sessions',
      status: 403,
      code: 'FORBIDDEN_SCOPE',
      message: 'no',
      requestId: 'req_2',
    });
    expect(describeFailure(forbidden)).toMatchObject({
      type: 'SupportApiError',
      retryable: false,
      nextRetryDelayMs: undefined,
      code: 'FORBIDDEN_SCOPE',
      requestId: 'req_2',
    });
    expect(JSON.stringify(describeFailure(forbidden).details)).toContain('req_2');
  });
});
