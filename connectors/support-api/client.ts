/**
 * The Support API v1 client: one undici `Agent` (keep-alive pools per origin, connect/headers/body
 * timeouts), the `cx-api-key` header from a `Secret`, the rate governor around every request, bounded
 * retries of retryable failures, and zod parsing of every response (see parse.ts).
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
import type { Secret } from '../../schemas/secret.js';
import { type Clock, systemClock } from './clock.js';
import {
  CursorRejectedError,
  type Endpoint,
  RateLimitedError,
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
  type RateClassStats,
  type RateDecision,
  type RateGovernor,
  sharedGovernors,
} from './rate-governor.js';
import { noteRequestSent } from './request-count.js';
import { type RouteClass, routeClassFor } from './route-classes.js';

export const API_PREFIX = '/public/v1';

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
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #mode: 'wait' | 'throw';
  readonly #maxRateWaitMs: number;
  readonly #retry: RetryPolicy;
  readonly #clock: Clock;
  readonly #userAgent: string;
  readonly #timeouts: { connectMs: number; headersMs: number; bodyMs: number };

  constructor(options: SupportApiClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '').replace(/\/public\/v1$/, '');
    this.#key = options.apiKey;
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
        const retryable = err instanceof SupportClientError && err.retryable;
        if (!retryable || !safe || attempt >= this.#retry.maxAttempts) {
          if (err instanceof SupportClientError) {
            // Transient failures that outlasted the retries are worth a warning; a permanent answer (a 404
            // for a ticket deleted meanwhile, a 401) is the caller's to report, with its context.
            const level = retryable ? 'warn' : 'debug';
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
      raw = await this.#http(req, endpoint);
    } catch (err) {
      this.governor.release(routeClass);
      throw err;
    }
    this.governor.observe(routeClass, raw);
    const json = decodeJson(endpoint, raw, this.#key);
    throwIfError(endpoint, raw, json, this.#key, this.#clock.now());
    this.logger.debug({ endpoint, status: raw.status }, 'ok');
    return { ...raw, json, endpoint };
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
    try {
      const res = await undiciRequest(url, {
        method: req.method,
        headers,
        body: body ?? null,
        dispatcher: this.#dispatcher,
        headersTimeout: this.#timeouts.headersMs,
        bodyTimeout: this.#timeouts.bodyMs,
        ...(req.signal ? { signal: req.signal } : {}),
      });
      const text = await res.body.text();
      return { status: res.statusCode, headers: res.headers, text };
    } catch (err) {
      throw this.#transportError(endpoint, err);
    }
  }

  #transportError(endpoint: Endpoint, err: unknown): Error {
    if (err instanceof SupportClientError) return err;
    if (err instanceof Error && err.name === 'AbortError') return err;
    const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
    const code =
      typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : undefined;
    const detail = this.#key.scrub(
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
    return this.#parsed(() => parseSingle(res.endpoint, res.status, res.json, schema));
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
    return this.#parsed(() => parsePage(res.endpoint, res.status, res.json, item, meta as M));
  }

  /** An unpaginated list in `data` (the metric catalog). */
  async getArray<S extends z.ZodType>(path: string, item: S): Promise<ParsedItems<z.infer<S>>> {
    const res = await this.send({ method: 'GET', path });
    return this.#parsed(() => parseArray(res.endpoint, res.status, res.json, item));
  }

  /** Parses, with the key scrubbed from every reported problem and drift (a broken server could echo it). */
  #parsed<T>(parse: () => T): T {
    try {
      const parsed = this.#scrubbedDrift(parse());
      const rejected = (parsed as Partial<ParsedItems<unknown>> | null)?.rejected;
      if (Array.isArray(rejected) && rejected.length > 0) {
        const clean = rejected.map((r: InvalidItem) => scrubRejected(r, this.#key));
        for (const r of clean) {
          this.logger.warn(
            { itemIndex: r.index, itemId: r.itemId, reason: r.reason },
            'list item breaks what the spec defines: set aside',
          );
        }
        return { ...parsed, rejected: clean };
      }
      return parsed;
    } catch (err) {
      if (err instanceof SchemaViolationError) {
        const clean = scrubViolation(err, this.#key);
        this.logger.error({ err: clean.toJSON() }, 'response breaks the schema');
        throw clean;
      }
      throw err;
    }
  }

  #scrubbedDrift<T>(parsed: T): T {
    const drift = (parsed as Partial<ParsedItems<unknown>> | null)?.drift;
    if (!Array.isArray(drift) || drift.length === 0) return parsed;
    return { ...parsed, drift: drift.map((o) => scrubDrift(o, this.#key)) };
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
    const item = this.#parsed(() => parseSingle(res.endpoint, res.status, res.json, Ticket));
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
