import { inspect } from 'node:util';
import fc from 'fast-check';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { withCancellation } from '../../connectors/support-api/cancellation.js';
import { DEADLINE_EXCEEDED, SupportApiClient } from '../../connectors/support-api/client.js';
import type { Clock } from '../../connectors/support-api/clock.js';
import {
  RateLimitedError,
  RedirectRefusedError,
  ResponseFormatError,
  ResponseTooLargeError,
  SchemaViolationError,
  SupportApiError,
  TransportError,
} from '../../connectors/support-api/errors.js';
import { fetchMetricCatalog, fetchTicketsPage } from '../../connectors/support-api/paginate.js';
import {
  MAX_REJECTED_KEPT,
  MAX_UNPAGINATED_ITEMS,
  TOO_DEEP_REASON,
  throwIfError,
} from '../../connectors/support-api/parse.js';
import { RateGovernor } from '../../connectors/support-api/rate-governor.js';
import { SERVER_TEXT_LIMITS, serverText } from '../../connectors/support-api/server-text.js';
import { MAX_CURSOR_CHARS } from '../../schemas/api/envelope.js';
import { Secret } from '../../schemas/secret.js';
import { jsonDeeperThan } from '../../schemas/warehouse.js';
import { ticket } from '../destinations/fixtures.js';
import { json, type StubHandler, startStub } from './support/stub-server.js';

/**
 * The client against a server that misbehaves on purpose: each case ends within a stated bound with an
 * error that names the route and what was exceeded, never with the key, an escape sequence or a server's
 * megabytes in it. Timing cases run on the real clock (the bound is the point); wait cases on a virtual one.
 */
const KEY = 'sk_live_HOSTILEKEY_0123456789abcdef';
// biome-ignore lint/suspicious/noControlCharactersInRegex: what must never reach an error
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

class InstantClock implements Clock {
  #now = Date.now();
  now(): number {
    return this.#now;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (ms > 0) this.#now += ms;
  }
}

const emptyPage = { success: true, data: [], pagination: { has_more: false, next_cursor: null } };

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A stub answering with `handler`, a client on it, the client's log lines, and the server's closed sockets. */
async function hostile(
  handler: StubHandler,
  opts: Partial<ConstructorParameters<typeof SupportApiClient>[0]> = {},
) {
  const closed: number[] = [];
  const stub = await startStub((req, res, n) => {
    res.on('close', () => closed.push(Date.now()));
    return handler(req, res, n);
  });
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
  const client = new SupportApiClient({
    baseUrl: stub.baseUrl,
    apiKey: new Secret(KEY),
    logger,
    governor: new RateGovernor(),
    retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 20 },
    ...opts,
  });
  cleanup.push(
    () => client.close(),
    () => stub.stop(),
  );
  return { stub, client, lines, closed };
}

/** Headers now, then one byte every `everyMs`, for ever (until the client goes). */
function drip(everyMs: number): StubHandler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{');
    const timer = setInterval(() => res.write(' '), everyMs);
    res.on('close', () => clearInterval(timer));
  };
}

async function timed<T>(work: Promise<T>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now();
  try {
    await work;
    return { error: undefined, ms: Date.now() - started };
  } catch (error) {
    return { error, ms: Date.now() - started };
  }
}

/** No piece of the key anywhere (the stack and inspect output included), no control character in the texts. */
function expectClean(...texts: unknown[]) {
  for (const t of texts) {
    const s = typeof t === 'string' ? t : `${String(t)} ${JSON.stringify(t)}`;
    const all = `${s} ${inspect(t, { depth: 6 })}`;
    expect(all).not.toContain(KEY);
    expect(all).not.toContain(KEY.slice(0, 12));
    expect(all).not.toContain(KEY.slice(-12));
    expect(s).not.toMatch(CONTROL);
  }
}

describe('a hostile source: every request ends within a bound', () => {
  it('slow drip (headers, then a byte every 2 s): a deadline error naming route and deadline, socket closed', async () => {
    const deadlineMs = 3000;
    // undici's body timeout (30 s between chunks) never fires against a byte every 2 s: only the deadline does.
    const { client, stub, closed } = await hostile(drip(2000), { deadlineMs });
    const { error, ms } = await timed(fetchTicketsPage(client, { limit: 1 }));
    expect(error).toBeInstanceOf(TransportError);
    const e = error as TransportError;
    expect(e.code).toBe(DEADLINE_EXCEEDED);
    expect(e.message).toMatch(/GET \/public\/v1\/tickets: timeout error DEADLINE_EXCEEDED/);
    expect(e.message).toContain('3000 ms (SUPPORT_API_REQUEST_DEADLINE)');
    // Not retried in place (a second try would double the bound): one request, one deadline.
    expect(stub.requests).toHaveLength(1);
    expect(ms).toBeGreaterThanOrEqual(deadlineMs - 50);
    expect(ms).toBeLessThan(deadlineMs + 1500);
    await expect.poll(() => closed.length, { timeout: 2000 }).toBe(1);
    console.info(`slow drip: deadline error after ${ms} ms (bound ${deadlineMs} ms)`);
  });

  it('endless body: stopped at the byte cap with an error naming route and cap, socket closed', async () => {
    const maxResponseBytes = 1024 * 1024;
    const { client, closed } = await hostile(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(64 * 1024, 0x20);
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) {}
          if (!res.destroyed) res.once('drain', pump);
        };
        res.write('{"success":true,"data":[');
        pump();
      },
      { maxResponseBytes },
    );
    const { error, ms } = await timed(fetchTicketsPage(client, { limit: 1 }));
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect((error as Error).message).toBe(
      'GET /public/v1/tickets: HTTP 200 response body is larger than 1048576 bytes (SUPPORT_API_MAX_RESPONSE_BYTES): read stopped',
    );
    expect((error as ResponseTooLargeError).retryable).toBe(false);
    expect(ms).toBeLessThan(5000);
    await expect.poll(() => closed.length, { timeout: 2000 }).toBe(1);
    console.info(`endless body: cap error after ${ms} ms`);
  });

  it('oversized body (a 5 MB page with its length announced): cap error, not retried', async () => {
    const big = JSON.stringify({ ...emptyPage, padding: 'x'.repeat(5 * 1024 * 1024) });
    const { client, stub } = await hostile(
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(big) });
        res.end(big);
      },
      { maxResponseBytes: 1024 * 1024 },
    );
    const { error, ms } = await timed(fetchTicketsPage(client, { limit: 1 }));
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(stub.requests).toHaveLength(1);
    console.info(`oversized body: cap error after ${ms} ms`);
  });

  it('a cancelled unit of work aborts its request at once and gives back its rate slot', async () => {
    const { client, closed } = await hostile(drip(200), { deadlineMs: 60_000 });
    const cancel = new AbortController();
    setTimeout(() => cancel.abort(new Error('activity cancelled')), 500);
    const { error, ms } = await timed(
      withCancellation(cancel.signal, () => fetchTicketsPage(client, { limit: 1 })),
    );
    expect((error as Error).message).toBe('activity cancelled');
    expect(ms).toBeLessThan(1500);
    await expect.poll(() => closed.length, { timeout: 2000 }).toBe(1);
    expect(client.rateStats().find((s) => s.routeClass === 'list')!.inFlight).toBe(0);
    console.info(`cancellation: request aborted ${ms - 500} ms after the signal`);
  });

  it('a huge Retry-After costs the cap (three windows), with a warning, not days', async () => {
    const clock = new InstantClock();
    const maxServerWaitMs = 180_000;
    const { client, lines } = await hostile(
      (_req, res, n) =>
        n === 1
          ? json(
              res,
              429,
              { success: false, code: 'RATE_LIMITED', message: 'slow down', request_id: 'r1' },
              { 'retry-after': '999999' },
            )
          : json(res, 200, emptyPage),
      { clock, governor: new RateGovernor({ clock }), maxServerWaitMs },
    );
    const before = clock.now();
    const page = await fetchTicketsPage(client, { limit: 1 });
    expect(page.items).toEqual([]);
    const waited = clock.now() - before;
    expect(waited).toBeGreaterThanOrEqual(maxServerWaitMs);
    expect(waited).toBeLessThan(maxServerWaitMs + 5000);
    const warning = lines.map((l) => JSON.parse(l)).find((l) => l.source === 'retry-after');
    expect(warning).toMatchObject({ askedMs: 999_999_000, capMs: maxServerWaitMs, level: 40 });

    // In throw mode (the worker's), the RateLimitedError tells Temporal the capped delay.
    const clock2 = new InstantClock();
    const worker = await hostile(
      (_req, res) =>
        json(
          res,
          429,
          { success: false, code: 'RATE_LIMITED', message: 'slow down', request_id: 'r2', retry_after: 1e9 },
          { 'retry-after': '999999' },
        ),
      {
        clock: clock2,
        governor: new RateGovernor({ clock: clock2 }),
        maxServerWaitMs,
        rateLimitMode: 'throw',
      },
    );
    const { error } = await timed(fetchTicketsPage(worker.client, { limit: 1 }));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(maxServerWaitMs);
    expect(worker.client.rateStats().find((s) => s.routeClass === 'list')!.pausedUntil).toBe(
      clock2.now() + maxServerWaitMs,
    );
  });

  it('an X-RateLimit-Reset far in the future with nothing remaining: the window ends within the cap', async () => {
    const clock = new InstantClock();
    const maxServerWaitMs = 180_000;
    const { client, lines } = await hostile(
      (_req, res) =>
        json(res, 200, emptyPage, {
          'x-ratelimit-limit': '10',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': '99999999999',
        }),
      { clock, governor: new RateGovernor({ clock }), maxServerWaitMs },
    );
    await fetchTicketsPage(client, { limit: 1 });
    const wait = client.rateDecision('list');
    expect(wait.reason).toBe('window_exhausted');
    expect(wait.waitMs).toBeLessThanOrEqual(maxServerWaitMs + 1000);
    expect(lines.some((l) => l.includes('"source":"x-ratelimit-reset"'))).toBe(true);
  });

  it("a redirect's reset a year away goes through the cap too, and stops no later request of its class", async () => {
    const clock = new InstantClock();
    const maxServerWaitMs = 180_000;
    const aYear = String(Math.round(clock.now() / 1000) + 365 * 24 * 3600);
    const { client, lines } = await hostile(
      (_req, res, n) => {
        if (n > 1) return json(res, 200, emptyPage);
        res.writeHead(302, {
          location: '/login',
          'x-ratelimit-limit': '60',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': aYear,
          'retry-after': String(365 * 24 * 3600),
        });
        res.end();
      },
      { clock, governor: new RateGovernor({ clock }), maxServerWaitMs, rateLimitMode: 'throw' },
    );
    const { error } = await timed(fetchTicketsPage(client, { limit: 1 }));
    expect(error).toBeInstanceOf(RedirectRefusedError);
    const clamped = lines.map((l) => JSON.parse(l)).filter((l) => l.capMs === maxServerWaitMs);
    expect(clamped.map((l) => l.source).sort()).toEqual(['retry-after', 'x-ratelimit-reset']);
    // The next request of the class goes at once (in throw mode a held class would throw RateLimitedError).
    expect(client.rateDecision('list')).toEqual({ waitMs: 0, reason: 'ok' });
    expect((await fetchTicketsPage(client, { limit: 1 })).items).toEqual([]);
  });

  it('a 5 MB error message with ANSI escapes and the key: a capped, clean error in errors and logs', async () => {
    const message = `\u001b[31m${'boom '.repeat(100)}${KEY}\u001b[0m ${'x'.repeat(5 * 1024 * 1024)} ${KEY}`;
    const { client, lines } = await hostile((_req, res) =>
      json(res, 500, {
        success: false,
        code: `E\u001b[2J${KEY}`,
        message,
        request_id: `req_\u0007${KEY}`,
      }),
    );
    const { error, ms } = await timed(fetchTicketsPage(client, { limit: 1 }));
    expect(error).toBeInstanceOf(SupportApiError);
    const e = error as SupportApiError;
    // The escapes are shown, escaped; the key (in code, message and request_id) is scrubbed before the cut.
    expect(e.message).toMatch(
      /^GET \/public\/v1\/tickets failed: HTTP 500 E\\u001b\[2J\[redacted\]: \\u001b\[31mboom boom /,
    );
    expect(e.message).toMatch(/boom… \(request_id req_\\u0007\[redacted\]\)$/);
    expect(e.message.length).toBeLessThan(900);
    expect(e.code.length).toBeLessThanOrEqual(SERVER_TEXT_LIMITS.code);
    expectClean(e, e.message, e.code, e.requestId, e.toJSON(), ...lines.map((l) => l.trimEnd()));
    expect(lines.join('\n').length).toBeLessThan(20_000);
    console.info(`5 MB error: ${e.message.length}-char message after ${ms} ms (3 attempts)`);
  });

  it('a 1 MB cursor breaks the schema: a clear error naming the field, not a 1 MB URL', async () => {
    const { client, stub } = await hostile((_req, res) =>
      json(res, 200, {
        success: true,
        data: [],
        pagination: { has_more: true, next_cursor: 'c'.repeat(1 << 20) },
      }),
    );
    const { error } = await timed(fetchTicketsPage(client, { limit: 1 }));
    expect(error).toBeInstanceOf(SchemaViolationError);
    expect((error as Error).message).toContain('field pagination.next_cursor');
    expect((error as Error).message).toContain(String(MAX_CURSOR_CHARS));
    expect((error as Error).message.length).toBeLessThan(500);
    expect(stub.requests).toHaveLength(1);
  });

  const evil = 'evil\u001b[2J\u001b]0;PWNED\u0007';
  const echoing = [
    { id: 't_1', subject: `echo ${KEY}`, [evil]: KEY, [`f_${KEY}`]: { deep: [KEY] } },
    { id: `id_${KEY}`, score: 'not a ticket' },
  ];

  it('a cursor holding NUL: refused as it arrives, one request, the field named', async () => {
    const items = echoing;
    const { client, lines, stub } = await hostile((req, res) =>
      json(res, 200, {
        success: true,
        data: items,
        pagination: req.url?.includes('cursor=')
          ? { has_more: false, next_cursor: null }
          : { has_more: true, next_cursor: 'next\u0000page' },
      }),
    );
    const { error } = await timed(fetchTicketsPage(client, { limit: 2 }));
    // The cursor is refused as it arrives: one request, the field named, the cursor never used.
    expect(error).toBeInstanceOf(SchemaViolationError);
    expect((error as Error).message).toMatch(
      /field pagination\.next_cursor: holds a control character or a lone surrogate/,
    );
    expect(stub.requests).toHaveLength(1);
    expectClean(error, (error as Error).message, ...lines.map((l) => l.trimEnd()));
  });

  it('the key echoed in items (a value, a name, an id), a field named with escapes: scrubbed, counted, escaped', async () => {
    // Every item, raw and typed, kept or set aside, without the key.
    const good = await hostile((_req, res) =>
      json(res, 200, {
        success: true,
        data: echoing,
        pagination: { has_more: false, next_cursor: null },
      }),
    );
    const page = await fetchTicketsPage(good.client, { limit: 2 });
    const everything = [page.items, page.rawItems, page.rejected, page.drift];
    expect(JSON.stringify(everything)).not.toContain(KEY);
    expect(JSON.stringify(everything)).toContain('[redacted]');
    for (const d of page.drift) expect(`${d.fieldPath} ${d.example} ${d.observed}`).not.toMatch(CONTROL);
    // Four strings and a name of the first item, the id of the second.
    expect(good.client.echoedSecrets()).toBe(5);
    expect(good.lines.filter((l) => l.includes('holds a configured secret'))).toHaveLength(1);
    expectClean(...good.lines.map((l) => l.trimEnd()));
  });

  it('non-JSON (a big HTML page with escapes and the key): a clean snippet, retried then reported', async () => {
    const page = `<html>\u001b[1m${KEY.slice(0, 10)}\u001b[0m${KEY.slice(10)}${'<p>down</p>'.repeat(100_000)}`;
    const { client, stub } = await hostile((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(page);
    });
    const { error } = await timed(fetchTicketsPage(client, { limit: 1 }));
    expect(error).toBeInstanceOf(ResponseFormatError);
    const e = error as ResponseFormatError;
    expect(e.message).toMatch(/an HTML\/XML page instead of JSON/);
    expect(e.bodySnippet.length).toBeLessThanOrEqual(SERVER_TEXT_LIMITS.snippet);
    expect(e.bodySnippet).toContain('[redacted]');
    expectClean(e, e.message);
    expect(stub.requests).toHaveLength(3); // retryable: a gateway's page is transient
  });

  it('a redirect is not followed: a clear error with the scrubbed Location, the key sent nowhere else', async () => {
    const elsewhere = await startStub((_req, res) => json(res, 200, emptyPage));
    cleanup.push(() => elsewhere.stop());
    const { client, stub } = await hostile((_req, res) => {
      res.writeHead(302, { location: `${elsewhere.baseUrl}/login?key=${KEY}&next=%1B%5B0m` });
      res.end();
    });
    const { error, ms } = await timed(fetchTicketsPage(client, { limit: 1 }));
    expect(error).toBeInstanceOf(RedirectRefusedError);
    const e = error as RedirectRefusedError;
    expect(e.message).toMatch(
      /^GET \/public\/v1\/tickets: HTTP 302 redirect to ".*\/login\?key=\[redacted\]&next=%1B%5B0m" not followed \(the API answers in place: check SUPPORT_API_URL\)$/,
    );
    expect(e.retryable).toBe(false);
    expectClean(e, e.message);
    expect(stub.requests).toHaveLength(1);
    expect(elsewhere.requests).toHaveLength(0);
    console.info(`redirect: refused after ${ms} ms`);
  });
});

describe('server strings (property)', () => {
  const keyArb = fc
    .string({
      unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_'),
      minLength: 8,
      maxLength: 48,
    })
    .filter((k) => !k.includes('redacted'));
  const control = fc.constantFrom(
    '\u001b[31m',
    '\u001b[0m',
    '\u001b]0;title\u0007',
    '\u0007',
    '\n',
    '\r',
    '\u009b',
    '\u007f',
    '\u0000',
    '\u001b',
  );
  /** A key cut into pieces with control characters between them, amid any text. */
  const textWithKey = (key: string) =>
    fc
      .array(
        fc.oneof(
          fc.string({ unit: 'binary' }),
          fc.constant(key),
          control,
          fc
            .integer({ min: 1, max: key.length - 1 })
            .chain((cut) => control.map((c) => `${key.slice(0, cut)}${c}${key.slice(cut)}`)),
        ),
        { maxLength: 12 },
      )
      .map((parts) => parts.join(''));

  it('serverText: never the key, never a control character, never longer than the cap', () => {
    fc.assert(
      fc.property(
        keyArb.chain((key) => fc.tuple(fc.constant(key), textWithKey(key), fc.integer({ min: 1, max: 300 }))),
        ([key, text, cap]) => {
          const out = serverText(text, new Secret(key), cap);
          expect(out).not.toContain(key);
          expect(out).not.toMatch(CONTROL);
          expect(out.length).toBeLessThanOrEqual(cap);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("the error envelope's message, code and request_id: the same three rules in the error", () => {
    fc.assert(
      fc.property(
        keyArb.chain((key) =>
          fc.tuple(
            fc.constant(key),
            textWithKey(key),
            textWithKey(key).filter((t) => t !== ''),
            textWithKey(key).filter((t) => t !== ''),
            fc.integer({ min: 400, max: 599 }),
          ),
        ),
        ([key, message, code, requestId, status]) => {
          const secret = new Secret(key);
          const body = { success: false, code, message, request_id: requestId };
          let thrown: unknown;
          try {
            throwIfError(
              'GET /public/v1/tickets',
              { status, headers: {}, text: '' },
              body,
              secret,
              Date.now(),
            );
          } catch (err) {
            thrown = err;
          }
          expect(thrown).toBeInstanceOf(SupportApiError);
          const e = thrown as SupportApiError;
          for (const text of [e.message, e.code, e.requestId, JSON.stringify(e.toJSON())]) {
            expect(text).not.toContain(key);
            expect(text).not.toMatch(CONTROL);
          }
          expect(e.code.length).toBeLessThanOrEqual(SERVER_TEXT_LIMITS.code);
          expect(e.requestId.length).toBeLessThanOrEqual(SERVER_TEXT_LIMITS.requestId);
          expect(e.message.length).toBeLessThanOrEqual(
            100 + SERVER_TEXT_LIMITS.code + SERVER_TEXT_LIMITS.message + SERVER_TEXT_LIMITS.requestId,
          );
        },
      ),
      { numRuns: 1000 },
    );
  });
});

/** `depth` arrays nested in one another, as JSON text (built without recursion). */
const nestedText = (depth: number, bottom = '0') => `${'['.repeat(depth)}${bottom}${']'.repeat(depth)}`;

describe('a hostile source: what a page costs is bounded by what it sends', () => {
  it('a page of six million numbers for a limit of 100: refused whole, one error, one log line', async () => {
    const numbers = `[${Array.from({ length: 6_000_000 }, (_, i) => i % 10).join(',')}]`;
    const body = `{"success":true,"data":${numbers},"pagination":{"has_more":false,"next_cursor":null}}`;
    const { client, lines, stub } = await hostile((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    const err = await fetchTicketsPage(client, { limit: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaViolationError);
    const violation = err as SchemaViolationError;
    expect(violation.issues).toHaveLength(1);
    expect(violation.message).toMatch(
      /field data: 6000000 items, more than the request's limit \(100\): the page is refused whole/,
    );
    expect(stub.requests).toHaveLength(1); // not retried: the page would be as large again
    const warnings = lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.length).toBeLessThan(2_000);
  });

  it('an unpaginated list of bare numbers: one log line, the first few kept, every item counted; past its bound refused whole', async () => {
    const count = MAX_UNPAGINATED_ITEMS;
    let length = count;
    const { client, lines } = await hostile((_req, res) => {
      const numbers = `[${Array.from({ length }, (_, i) => i).join(',')}]`;
      res.writeHead(200, { 'content-type': 'application/json' }).end(`{"success":true,"data":${numbers}}`);
    });
    const page = await fetchMetricCatalog(client);
    expect(page.items).toEqual([]);
    expect(page.rejected).toHaveLength(MAX_REJECTED_KEPT);
    expect(page.rejected.map((r) => r.index)).toEqual([...Array(MAX_REJECTED_KEPT).keys()]);
    expect(page.rejectedPastCap).toBe(count - MAX_REJECTED_KEPT);
    const setAside = lines.filter((l) => l.includes('list items set aside'));
    expect(setAside).toHaveLength(1);
    expect(lines.filter((l) => (JSON.parse(l) as { level: number }).level >= 40)).toEqual(setAside);
    const logged = JSON.parse(setAside[0]!) as {
      setAside: number;
      notRead: number;
      byReason: { reason: string; items: number }[];
      examples: unknown[];
    };
    expect(logged.setAside).toBe(count);
    expect(logged.notRead).toBe(count - MAX_REJECTED_KEPT);
    expect(logged.byReason).toEqual([
      { reason: expect.stringMatching(/expected object/), items: MAX_REJECTED_KEPT },
    ]);
    expect(logged.examples).toHaveLength(3);
    expect(setAside[0]!.length).toBeLessThan(3_000);

    length = 300_000;
    const err = await fetchMetricCatalog(client).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SchemaViolationError);
    expect((err as Error).message).toMatch(
      new RegExp(`300000 items, more than an unpaginated list may hold \\(${count}\\)`),
    );
  });

  it('an item nested 10,000 levels deep that also breaks the schema: set aside, cut, no stack overflow', async () => {
    const deep = `{"id":"t-deep","ticket_number":"not a number","x":${nestedText(10_000)}}`;
    const body = `{"success":true,"data":[${deep}],"pagination":{"has_more":false,"next_cursor":null}}`;
    const { client, stub } = await hostile((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    const page = await fetchTicketsPage(client, { limit: 10 });
    expect(stub.requests).toHaveLength(1);
    expect(page.rejected).toHaveLength(1);
    expect(page.rejected[0]!.itemId).toBe('t-deep');
    expect(page.rejected[0]!.reason).toMatch(/ticket_number/);
    expect(JSON.stringify(page.rejected[0]!.raw)).toContain('nested deeper than');
  });

  it('an item nested 10,000 levels deep in an unknown field: set aside for its depth, the rest kept', async () => {
    const good = JSON.stringify(ticket({ ticket_number: 1 }));
    const deep = JSON.stringify(ticket({ ticket_number: 2 })).replace(/}$/, `,"x":${nestedText(10_000)}}`);
    const { client } = await hostile((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"success":true,"data":[${good},${deep}],"pagination":{"has_more":false,"next_cursor":null}}`);
    });
    const page = await fetchTicketsPage(client, { limit: 10 });
    expect(page.items.map((t) => t.ticket_number)).toEqual([1]);
    expect(page.rejected.map((r) => [r.index, r.reason])).toEqual([[1, TOO_DEEP_REASON]]);
    expect(jsonDeeperThan(page.rejected[0]!.raw)).toBe(false);
  });

  it('an error body nested 10,000 levels deep: a clean format error, not a stack overflow', async () => {
    const { client } = await hostile((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(`{"success":false,"detail":${nestedText(10_000)}}`);
    });
    const err = await fetchTicketsPage(client, { limit: 10 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseFormatError);
    expect((err as Error).message).toMatch(/error response without the API's error envelope/);
  });
});
