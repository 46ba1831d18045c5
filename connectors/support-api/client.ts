/**
 * The Support API v1 client: one undici `Agent` (keep-alive pools per origin, connect/headers/body
 * timeouts), the `cx-api-key` header from a `Secret`, the rate governor around every request, bounded
 * retries of retryable failures, and zod parsing of every response (see parse.ts).
 *
 * Every exchange is bounded whatever the server does: an overall deadline (connect to last body byte; undici's
 * own timeouts only measure the gaps between chunks, which a server dripping a byte a second never opens), a
 * byte cap on the body read as a stream, redirects refused, the server's waits capped, and its strings
 * cleaned and cut before they reach an error (server-text.ts). A unit of work's cancellation signal
 * (cancellation.ts) aborts its requests, so a cancelled or timed-out activity gives back its socket and slot.
 *
 * Why undici directly (not fetch): per-phase timeouts, a dispatcher we own and close, and `request()`
 * being the fastest path in Node for a crawl of many small JSON pages.
 */
import { inspect } from 'node:util';
import pino, { type Logger } from 'pino';
import { Agent, type Dispatcher, request as undiciRequest } from 'undici';
import type { z } from 'zod';
import { Health } from '../../schemas/api/health.js';
import { KeyIdentity } from '../../schemas/api/identity.js';
import { ReportQueryBody, ReportResult } from '../../schemas/api/reports.js';
import { Ticket } from '../../schemas/api/tickets.js';
import { type Secret, Secrets } from '../../schemas/secret.js';
import { currentCancellation } from './cancellation.js';
import { type Clock, systemClock } from './clock.js';
import { scrubEchoedSecrets } from './echoed-secrets.js';
import {
  CursorRejectedError,
  type Endpoint,
  RateLimitedError,
  RedirectRefusedError,
  ResponseTooLargeError,
  SchemaViolationError,
  SupportApiError,
  SupportClientError,
  TransportError,
} from './errors.js';
import {
  decodeJson,
  type InvalidItem,
  type ParsedItems,
  type ParsedPage,
  parseArray,
  parsePage,
  parseSingle,
  type RawResponse,
  scrubDrift,
  scrubRejected,
  scrubViolation,
  throwIfError,
} from './parse.js';
import {
  capServerWaits,
  type RateClassStats,
  type RateDecision,
  type RateGovernor,
  SERVER_WAIT_CAP_WINDOWS,
  sharedGovernors,
} from './rate-governor.js';
import { noteRequestSent } from './request-count.js';
import { type RouteClass, routeClassFor } from './route-classes.js';
import { SERVER_TEXT_LIMITS, serverText } from './server-text.js';

export const API_PREFIX = '/public/v1';

/** SUPPORT_API_MAX_RESPONSE_BYTES' default (see schemas/config.ts for why this size). */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;
/** SUPPORT_API_REQUEST_DEADLINE's default. */
export const DEFAULT_REQUEST_DEADLINE_MS = 60_000;
/** The spec's rate window, which the cap on server-named waits counts in unless told another. */
const DEFAULT_RATE_WINDOW_MS = 60_000;
/** Items set aside that the page's one log line shows as examples. */
const SET_ASIDE_EXAMPLES = 3;
/** `TransportError.code` of an exchange that outlasted the request deadline. */
export const DEADLINE_EXCEEDED = 'DEADLINE_EXCEEDED';

export interface RetryPolicy {
  /** Attempts per request for 5xx, network errors, timeouts and garbled bodies (default 5; 1 = no retry). */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** How many 429s one request may wait out in `wait` mode before giving up (default 20). */
  maxRateLimitRetries: number;
}

export interface SupportApiClientOptions {
  /** The service's base URL, without `/public/v1` (the client adds it). */
  baseUrl: string;
  apiKey: Secret;
  /**
   * The process's other secrets, scrubbed like the key from everything the server says (a source cannot know
   * them, but an answer that holds one must not carry it further either).
   */
  otherSecrets?: Iterable<Secret | undefined>;
  logger?: Logger;
  /** Default: the process-wide governor of this key (`sharedGovernors.for(apiKey)`). */
  governor?: RateGovernor;
  /**
   * `wait` (default): the client sleeps for pacing and 429s. `throw`: waits longer than `maxRateWaitMs`
   * and every 429 throw `RateLimitedError` with `retryAfterMs` (for Temporal activities).
   */
  rateLimitMode?: 'wait' | 'throw';
  /** In `throw` mode, pacing waits up to this many ms are still slept (default 2000). */
  maxRateWaitMs?: number;
  timeouts?: Partial<{ connectMs: number; headersMs: number; bodyMs: number }>;
  /**
   * How long one exchange (connect, headers, the whole body) may take at most (default 60 s); past it the
   * request is aborted and fails with a `TransportError` of code `DEADLINE_EXCEEDED`, which the client does
   * not retry itself (a second try would double the bound; its caller's retries decide).
   */
  deadlineMs?: number;
  /** The largest response body read (default 64 MiB); a larger one fails with `ResponseTooLargeError`. */
  maxResponseBytes?: number;
  /**
   * The longest wait a server may name (`Retry-After`, `X-RateLimit-Reset`, the envelope's `retry_after`);
   * a longer one is cut to it, with a warning. Default: three times the spec's one-minute window.
   */
  maxServerWaitMs?: number;
  retry?: Partial<RetryPolicy>;
  /** A dispatcher to use instead of the client's own `Agent` (not closed by `close()`). */
  dispatcher?: Dispatcher;
  clock?: Clock;
  userAgent?: string;
}

export interface ApiRequest {
  method: 'GET' | 'POST';
  /** Path under `/public/v1`, e.g. `/tickets/12/messages`. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  /** Whether repeating the request is harmless (GETs, sends with an Idempotency-Key). Default: GET only. */
  idempotent?: boolean;
  /** Skip the `cx-api-key` header (health). */
  anonymous?: boolean;
  signal?: AbortSignal;
}

export interface ApiResponse extends RawResponse {
  json: unknown;
  endpoint: Endpoint;
}

/** Undici errors whose request certainly never reached the server. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'EHOSTUNREACH',
]);
const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);

export class SupportApiClient {
  readonly baseUrl: string;
  readonly governor: RateGovernor;
  readonly logger: Logger;
  readonly #key: Secret;
  /** The key and the process's other secrets: scrubbed from every answer and every text the server chose. */
  readonly #secrets: Secrets;
  #echoedSecrets = 0;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #mode: 'wait' | 'throw';
  readonly #maxRateWaitMs: number;
  readonly #retry: RetryPolicy;
  readonly #clock: Clock;
  readonly #userAgent: string;
  readonly #timeouts: { connectMs: number; headersMs: number; bodyMs: number };
  readonly deadlineMs: number;
  readonly maxResponseBytes: number;
  readonly maxServerWaitMs: number;

  constructor(options: SupportApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '').replace(/\/public\/v1$/, '');
    this.#key = options.apiKey;
    this.#secrets = new Secrets([options.apiKey, ...(options.otherSecrets ?? [])]);
    this.logger = (options.logger ?? defaultLogger()).child({ component: 'support-api' });
    this.governor = options.governor ?? sharedGovernors.for(options.apiKey);
    this.#mode = options.rateLimitMode ?? 'wait';
    this.#maxRateWaitMs = options.maxRateWaitMs ?? 2000;
    this.#retry = {
      maxAttempts: 5,
      baseDelayMs: 250,
      maxDelayMs: 10_000,
      maxRateLimitRetries: 20,
      ...options.retry,
    };
    this.#clock = options.clock ?? systemClock;
    this.#userAgent = options.userAgent ?? 'support-sync/0.1';
    const t = { connectMs: 10_000, headersMs: 30_000, bodyMs: 30_000, ...options.timeouts };
    this.#timeouts = t;
    this.deadlineMs = options.deadlineMs ?? DEFAULT_REQUEST_DEADLINE_MS;
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.maxServerWaitMs = options.maxServerWaitMs ?? SERVER_WAIT_CAP_WINDOWS * DEFAULT_RATE_WINDOW_MS;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        connect: { timeout: t.connectMs },
        headersTimeout: t.headersMs,
        bodyTimeout: t.bodyMs,
        keepAliveTimeout: 30_000,
        connections: 16,
      });
  }

  /** Never serialize internals (the key is a redacting `Secret` anyway). */
  toJSON(): Record<string, unknown> {
    return { baseUrl: this.baseUrl, mode: this.#mode };
  }
  [inspect.custom](): string {
    return `SupportApiClient(${this.baseUrl})`;
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  /** Strings and member names of this client's answers that held a secret, stored with it `[redacted]`. */
  echoedSecrets(): number {
    return this.#echoedSecrets;
  }

  rateStats(): RateClassStats[] {
    return this.governor.stats();
  }

  /** What the governor would do now for a class (for activities deciding to yield to Temporal). */
  rateDecision(routeClass: RouteClass): RateDecision {
    return this.governor.decide(routeClass);
  }

  // ---------------------------------------------------------------------------------------------------
  // Core

  /**
   * Sends one request through the governor with retries, and returns the decoded JSON of a success
   * response. Error envelopes throw `SupportApiError`; non-JSON bodies throw `ResponseFormatError`.
   */
  async send(req: ApiRequest): Promise<ApiResponse> {
    const routeClass = routeClassFor(req.method, req.path);
    const endpoint: Endpoint = `${req.method} ${API_PREFIX}${req.path}`;
    const idempotent = req.idempotent ?? req.method === 'GET';
    const signal = combined(req.signal, currentCancellation());
    if (signal) req = { ...req, signal };
    let attempt = 0;
    let rateRetries = 0;
    for (;;) {
      attempt += 1;
      try {
        return await this.#attempt(req, routeClass, endpoint);
      } catch (err) {
        if (err instanceof RateLimitedError) throw err;
        if (err instanceof SupportApiError && err.status === 429) {
          rateRetries += 1;
          attempt -= 1; // 429s have their own budget
          const retryAfterMs = (err.retryAfterSeconds ?? 1) * 1000;
          this.logger.warn(
            { endpoint, routeClass, requestId: err.requestId, retryAfterMs, rateRetries },
            'rate limited (429)',
          );
          if (this.#mode === 'throw' || rateRetries > this.#retry.maxRateLimitRetries) {
            throw new RateLimitedError({
              endpoint,
              routeClass,
              retryAfterMs,
              reason: '429 from server',
              apiError: err,
            });
          }
          continue; // the governor is paused until Retry-After; acquire waits it out
        }
        const safe =
          idempotent ||
          (err instanceof TransportError && err.notSent) ||
          (err instanceof SupportApiError && err.code === 'IDEMPOTENCY_KEY_IN_PROGRESS');
        // An exchange that used its whole deadline is not tried again here: that would multiply the bound.
        const retryable =
          err instanceof SupportClientError &&
          err.retryable &&
          !(err instanceof TransportError && err.code === DEADLINE_EXCEEDED);
        if (!retryable || !safe || attempt >= this.#retry.maxAttempts) {
          if (err instanceof SupportClientError) {
            // Transient failures that outlasted the retries are worth a warning; a permanent answer (a 404
            // for a ticket deleted meanwhile, a 401) is the caller's to report, with its context.
            const level = err.retryable ? 'warn' : 'debug';
            this.logger[level]({ endpoint, err: err.toJSON(), attempt }, 'request failed');
          }
          throw err;
        }
        const delay = this.#backoff(attempt);
        this.logger.warn(
          { endpoint, err: (err as SupportClientError).toJSON(), attempt, retryInMs: delay },
          'retrying after a retryable failure',
        );
        await this.#clock.sleep(delay, req.signal);
      }
    }
  }

  #backoff(attempt: number): number {
    const cap = Math.min(this.#retry.maxDelayMs, this.#retry.baseDelayMs * 2 ** (attempt - 1));
    return Math.round(cap / 2 + (Math.random() * cap) / 2);
  }

  async #attempt(req: ApiRequest, routeClass: RouteClass, endpoint: Endpoint): Promise<ApiResponse> {
    await this.governor.acquire(routeClass, {
      endpoint,
      ...(this.#mode === 'throw' ? { maxWaitMs: this.#maxRateWaitMs } : {}),
      ...(req.signal ? { signal: req.signal } : {}),
    });
    let raw: RawResponse;
    noteRequestSent();
    try {
      // Every answer's waits are capped before anything reads them (the governor, an error, a retry),
      // whatever its status: a redirect's reset a year away is the cap away too.
      raw = this.#capped(endpoint, await this.#http(req, endpoint), undefined).raw;
    } catch (err) {
      this.governor.release(routeClass);
      throw err;
    }
    if (raw.status >= 300 && raw.status < 400) {
      this.governor.observe(routeClass, raw);
      const location = raw.headers['location'];
      throw new RedirectRefusedError({
        endpoint,
        status: raw.status,
        location: serverText(
          (Array.isArray(location) ? location[0] : location) ?? '(none)',
          this.#secrets,
          SERVER_TEXT_LIMITS.location,
        ),
      });
    }
    let json: unknown;
    try {
      json = decodeJson(endpoint, raw, this.#secrets);
    } catch (err) {
      this.governor.observe(routeClass, raw);
      throw err;
    }
    this.#scrubEchoed(endpoint, json, raw.text);
    // The headers are capped already: what is left is the envelope's `retry_after`.
    const capped = this.#capped(endpoint, raw, json);
    this.governor.observe(routeClass, capped.raw);
    throwIfError(endpoint, capped.raw, capped.json, this.#secrets, this.#clock.now());
    this.logger.debug({ endpoint, status: raw.status }, 'ok');
    return { ...raw, json, endpoint };
  }

  /** The answer with every secret scrubbed from it (echoed-secrets.ts), counted, and said once per answer. */
  #scrubEchoed(endpoint: Endpoint, json: unknown, text: string): void {
    const echoed = scrubEchoedSecrets(json, text, this.#secrets);
    if (echoed === 0) return;
    this.#echoedSecrets += echoed;
    this.logger.warn(
      { endpoint, values: echoed },
      'the answer holds a configured secret (the API key echoed?): stored and shown as [redacted]',
    );
  }

  /** The response with the server's waits cut to `maxServerWaitMs`, each cut logged. */
  #capped(endpoint: Endpoint, raw: RawResponse, json: unknown): { raw: RawResponse; json: unknown } {
    const {
      headers,
      json: cappedJson,
      clamped,
    } = capServerWaits(raw, json, this.#clock.now(), this.maxServerWaitMs);
    for (const c of clamped) {
      this.logger.warn(
        { endpoint, source: c.source, askedMs: Math.round(c.askedMs), capMs: this.maxServerWaitMs },
        'the server asked for a longer wait than the cap: waiting the cap',
      );
    }
    return { raw: { ...raw, headers }, json: cappedJson };
  }

  async #http(req: ApiRequest, endpoint: Endpoint): Promise<RawResponse> {
    const url = new URL(`${this.baseUrl}${API_PREFIX}${req.path}`);
    for (const [k, v] of Object.entries(req.query ?? {})) {
      if (v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers: Record<string, string> = {
      accept: 'application/json',
      'user-agent': this.#userAgent,
      ...req.headers,
    };
    if (!req.anonymous) headers['cx-api-key'] = this.#key.reveal();
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), this.deadlineMs);
    const signal = req.signal ? AbortSignal.any([req.signal, deadline.signal]) : deadline.signal;
    try {
      const res = await undiciRequest(url, {
        method: req.method,
        headers,
        body: body ?? null,
        dispatcher: this.#dispatcher,
        headersTimeout: this.#timeouts.headersMs,
        bodyTimeout: this.#timeouts.bodyMs,
        signal,
      });
      const text = await this.#boundedBody(endpoint, res.statusCode, res.body);
      return { status: res.statusCode, headers: res.headers, text };
    } catch (err) {
      if (req.signal?.aborted) throw req.signal.reason;
      if (deadline.signal.aborted) {
        throw new TransportError({
          endpoint,
          code: DEADLINE_EXCEEDED,
          kind: 'timeout',
          detail: `no complete response within ${this.deadlineMs} ms (SUPPORT_API_REQUEST_DEADLINE)`,
          notSent: false,
        });
      }
      throw this.#transportError(endpoint, err);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The body as text, read as a stream and abandoned (its socket destroyed) once past the byte cap. */
  async #boundedBody(
    endpoint: Endpoint,
    status: number,
    body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown },
  ): Promise<string> {
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of body) {
      bytes += chunk.length;
      if (bytes > this.maxResponseBytes) {
        const err = new ResponseTooLargeError({ endpoint, status, maxBytes: this.maxResponseBytes });
        body.destroy(err);
        throw err;
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, bytes).toString('utf8');
  }

  #transportError(endpoint: Endpoint, err: unknown): Error {
    if (err instanceof SupportClientError) return err;
    if (err instanceof Error && err.name === 'AbortError') return err;
    const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
    const code =
      typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : undefined;
    const detail = this.#secrets.scrub(
      [e.message, e.cause?.message].filter((m): m is string => typeof m === 'string').join(': ') ||
        String(err),
    );
    return new TransportError({
      endpoint,
      code,
      kind: code !== undefined && TIMEOUT_CODES.has(code) ? 'timeout' : 'network',
      detail,
      notSent: code !== undefined && NOT_SENT_CODES.has(code),
    });
  }

  /** Sends and parses `data` with `schema`. */
  async getOne<S extends z.ZodType>(req: ApiRequest, schema: S): Promise<z.infer<S>> {
    const res = await this.send(req);
    return this.#parsed(res.endpoint, () => parseSingle(res.endpoint, res.status, res.json, schema));
  }

  /**
   * One cursor page of a list. A `400 VALIDATION_ERROR` on a request that carried a cursor throws
   * `CursorRejectedError` (restart the window from its start).
   */
  async getPage<S extends z.ZodType, M extends z.ZodType | undefined = undefined>(
    path: string,
    query: Record<string, string | number | boolean | undefined>,
    item: S,
    meta?: M,
    signal?: AbortSignal,
  ): Promise<ParsedPage<z.infer<S>, M extends z.ZodType ? z.infer<M> : undefined>> {
    let res: ApiResponse;
    try {
      res = await this.send({ method: 'GET', path, query, ...(signal ? { signal } : {}) });
    } catch (err) {
      const cursor = query['cursor'];
      if (
        typeof cursor === 'string' &&
        err instanceof SupportApiError &&
        err.status === 400 &&
        err.code === 'VALIDATION_ERROR'
      ) {
        throw new CursorRejectedError(err.endpoint, cursor, err);
      }
      throw err;
    }
    const limit = query['limit'];
    return this.#parsed(res.endpoint, () =>
      parsePage(
        res.endpoint,
        res.status,
        res.json,
        item,
        meta as M,
        typeof limit === 'number' ? limit : undefined,
      ),
    );
  }

  /** An unpaginated list in `data` (the metric catalog). */
  async getArray<S extends z.ZodType>(path: string, item: S): Promise<ParsedItems<z.infer<S>>> {
    const res = await this.send({ method: 'GET', path });
    return this.#parsed(res.endpoint, () => parseArray(res.endpoint, res.status, res.json, item));
  }

  /**
   * Parses, with the key scrubbed from every reported problem and drift (a broken server could echo it).
   * Items set aside are logged in one line per page, however many there are: how many, the kept ones
   * counted by reason, a few examples.
   */
  #parsed<T>(endpoint: Endpoint, parse: () => T): T {
    try {
      const parsed = this.#scrubbedDrift(parse());
      const page = parsed as Partial<ParsedItems<unknown>> | null;
      const rejected = page?.rejected;
      if (Array.isArray(rejected) && rejected.length > 0) {
        const clean = rejected.map((r: InvalidItem) => scrubRejected(r, this.#secrets));
        this.#logSetAside(endpoint, clean, page?.rejectedPastCap ?? 0);
        return { ...parsed, rejected: clean };
      }
      return parsed;
    } catch (err) {
      if (err instanceof SchemaViolationError) {
        const clean = scrubViolation(err, this.#secrets);
        this.logger.error({ err: clean.toJSON() }, 'response breaks the schema');
        throw clean;
      }
      throw err;
    }
  }

  #logSetAside(endpoint: Endpoint, kept: readonly InvalidItem[], pastCap: number): void {
    const byReason = new Map<string, number>();
    for (const r of kept) byReason.set(r.reason, (byReason.get(r.reason) ?? 0) + 1);
    this.logger.warn(
      {
        endpoint,
        setAside: kept.length + pastCap,
        // Reasons are read for the items kept (MAX_REJECTED_KEPT); those past the cap are only counted.
        byReason: [...byReason].map(([reason, items]) => ({ reason, items })),
        notRead: pastCap,
        examples: kept
          .slice(0, SET_ASIDE_EXAMPLES)
          .map((r) => ({ itemIndex: r.index, itemId: r.itemId, reason: r.reason })),
      },
      'list items set aside: they break what the spec defines',
    );
  }

  #scrubbedDrift<T>(parsed: T): T {
    const drift = (parsed as Partial<ParsedItems<unknown>> | null)?.drift;
    if (!Array.isArray(drift) || drift.length === 0) return parsed;
    return { ...parsed, drift: drift.map((o) => scrubDrift(o, this.#secrets)) };
  }

  // ---------------------------------------------------------------------------------------------------
  // Single reads (spec 4; the writes, which only tests make, are in test/support/api-writes.ts)

  /** `GET /health` (no key). */
  health(): Promise<Health> {
    return this.getOne({ method: 'GET', path: '/health', anonymous: true }, Health);
  }

  /**
   * `GET /me`: the key's scopes and linked agent (not in the spec: see schemas/api/identity.ts). A source
   * without it answers 404 (a SupportApiError).
   */
  identity(): Promise<KeyIdentity> {
    return this.getOne({ method: 'GET', path: '/me' }, KeyIdentity);
  }

  /** `GET /tickets/:ticketNumber`. */
  async getTicket(ticketNumber: number, options: { includeTicketFields?: boolean } = {}): Promise<Ticket> {
    return (await this.readTicket(ticketNumber, options)).item;
  }

  /**
   * `GET /tickets/:ticketNumber`, with the JSON object the ticket was parsed from: the warehouse keeps both
   * (`_raw`), so a reader comparing a stored row with the source needs both too.
   */
  async readTicket(
    ticketNumber: number,
    options: { includeTicketFields?: boolean } = {},
  ): Promise<{ item: Ticket; raw: Record<string, unknown> }> {
    const res = await this.send({
      method: 'GET',
      path: `/tickets/${ticketPathSegment(ticketNumber)}`,
      query: { include: options.includeTicketFields ? 'ticket_fields' : undefined },
    });
    const item = this.#parsed(res.endpoint, () => parseSingle(res.endpoint, res.status, res.json, Ticket));
    return { item, raw: (res.json as { data: Record<string, unknown> }).data };
  }

  /** `POST /reports/query`. A read: retried like a GET. */
  queryReport(body: ReportQueryBody): Promise<ReportResult> {
    return this.getOne(
      { method: 'POST', path: '/reports/query', body: ReportQueryBody.parse(body), idempotent: true },
      ReportResult,
    );
  }
}

/** One signal that aborts when any of the given ones does (undefined when there is none). */
function combined(...signals: (AbortSignal | undefined)[]): AbortSignal | undefined {
  const present = signals.filter((s): s is AbortSignal => s !== undefined);
  if (present.length <= 1) return present[0];
  return AbortSignal.any(present);
}

function ticketPathSegment(ticketNumber: number): string {
  if (!Number.isInteger(ticketNumber) || ticketNumber <= 0)
    throw new TypeError(`invalid ticket number ${ticketNumber}`);
  return String(ticketNumber);
}

function defaultLogger(): Logger {
  return pino(
    { level: process.env['SUPPORT_API_LOG_LEVEL'] ?? 'warn' },
    pino.destination({ fd: 2, sync: true }),
  );
}
