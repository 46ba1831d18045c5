/**
 * Typed errors of the Support API client and their classification (retryable or not).
 *
 * Every error here carries only data that is safe to log: the endpoint (method + path, never the key), the
 * HTTP status, the API's `code` and `request_id`. The API key never enters a message, because the client
 * scrubs every third-party text (undici's messages, response bodies) with `Secret.scrub` before it builds one.
 */

/** `GET /tickets`-style label used in every error: method and path without the origin or query values. */
export type Endpoint = string;

/** Base class: every error the client throws is a `SupportClientError`. */
export abstract class SupportClientError extends Error {
  abstract readonly retryable: boolean;
  readonly endpoint: Endpoint;
  constructor(endpoint: Endpoint, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.endpoint = endpoint;
  }
  /** JSON form for logs and Temporal failure details: no stack, no cause chain, no headers. */
  toJSON(): Record<string, unknown> {
    return { name: this.name, message: this.message, endpoint: this.endpoint, retryable: this.retryable };
  }
}

/** The API answered with its error envelope (spec 2.1, 7). Branch on `code`, never on `message`. */
export class SupportApiError extends SupportClientError {
  readonly status: number;
  readonly code: string;
  readonly requestId: string;
  /** From the `Retry-After` header, else the envelope's `retry_after`; only on 429 in practice. */
  readonly retryAfterSeconds: number | undefined;
  readonly retryable: boolean;
  constructor(args: {
    endpoint: Endpoint;
    status: number;
    code: string;
    message: string;
    requestId: string;
    retryAfterSeconds?: number | undefined;
  }) {
    super(
      args.endpoint,
      `${args.endpoint} failed: HTTP ${args.status} ${args.code}: ${args.message} (request_id ${args.requestId})`,
    );
    this.status = args.status;
    this.code = args.code;
    this.requestId = args.requestId;
    this.retryAfterSeconds = args.retryAfterSeconds;
    this.retryable = args.status === 429 || args.status >= 500 || args.code === 'IDEMPOTENCY_KEY_IN_PROGRESS';
  }
  override toJSON(): Record<string, unknown> {
    return {
      ...super.toJSON(),
      status: this.status,
      code: this.code,
      requestId: this.requestId,
      retryAfterSeconds: this.retryAfterSeconds,
    };
  }
}

/**
 * The body was not the API's JSON (an HTML page from a proxy, truncated or empty JSON). Retryable with a
 * 2xx, 408, 429 or 5xx status: such bodies come from gateways and broken connections, not from the API
 * deciding the request is wrong. With another 4xx it is not retried.
 */
export class ResponseFormatError extends SupportClientError {
  readonly status: number;
  readonly retryable: boolean;
  readonly contentType: string | undefined;
  /** The first characters of the body (already scrubbed of the key), for diagnosis. */
  readonly bodySnippet: string;
  constructor(args: {
    endpoint: Endpoint;
    status: number;
    contentType: string | undefined;
    problem: string;
    bodySnippet: string;
  }) {
    super(
      args.endpoint,
      `${args.endpoint}: HTTP ${args.status} response is not the API's JSON envelope: ${args.problem}` +
        ` (content-type ${args.contentType ?? 'none'}; body starts ${JSON.stringify(args.bodySnippet)})`,
    );
    this.status = args.status;
    this.retryable = args.status < 400 || args.status >= 500 || args.status === 408 || args.status === 429;
    this.contentType = args.contentType;
    this.bodySnippet = args.bodySnippet;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), status: this.status, contentType: this.contentType };
  }
}

/** One problem of a schema violation: where in the response, and (for list items) which item. */
export interface SchemaIssue {
  /** Index of the item in `data` for lists; undefined for the envelope or a single object. */
  itemIndex?: number | undefined;
  /** The item's `id` if it had one (string or number). */
  itemId?: string | undefined;
  /** Field path inside the item (or the envelope), e.g. `contact.email` or `pagination.next_cursor`. */
  path: string;
  message: string;
}

/**
 * Valid JSON that breaks the schema. Not retryable: the same page will break again. Names the endpoint,
 * the item index, the item's id and the field, so the pipeline can report "the offending id and field".
 */
export class SchemaViolationError extends SupportClientError {
  readonly retryable = false;
  readonly status: number;
  readonly issues: SchemaIssue[];
  constructor(endpoint: Endpoint, status: number, issues: SchemaIssue[]) {
    super(
      endpoint,
      `${endpoint}: response breaks the schema: ${issues.slice(0, 5).map(describeIssue).join('; ')}`,
    );
    this.status = status;
    this.issues = issues;
  }
  /** The first offending item's id, if any (convenience for failure messages). */
  get itemId(): string | undefined {
    return this.issues.find((i) => i.itemId !== undefined)?.itemId;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), status: this.status, issues: this.issues };
  }
}

function describeIssue(i: SchemaIssue): string {
  const where =
    i.itemIndex === undefined
      ? `field ${i.path || '(root)'}`
      : `item ${i.itemIndex}${i.itemId === undefined ? '' : ` (id ${i.itemId})`} field ${i.path || '(root)'}`;
  return `${where}: ${i.message}`;
}

/** No usable HTTP response: connection refused or reset, DNS, TLS, or one of the client's timeouts. */
export class TransportError extends SupportClientError {
  readonly retryable = true;
  /** undici's error code (`UND_ERR_HEADERS_TIMEOUT`, `ECONNRESET`, …) when known. */
  readonly code: string | undefined;
  readonly kind: 'timeout' | 'network';
  /** True when the request certainly did not reach the server (connect failure): safe to retry any write. */
  readonly notSent: boolean;
  constructor(args: {
    endpoint: Endpoint;
    code: string | undefined;
    kind: 'timeout' | 'network';
    detail: string;
    notSent: boolean;
  }) {
    super(
      args.endpoint,
      `${args.endpoint}: ${args.kind} error${args.code ? ` ${args.code}` : ''}: ${args.detail}`,
    );
    this.code = args.code;
    this.kind = args.kind;
    this.notSent = args.notSent;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), code: this.code, kind: this.kind };
  }
}

/**
 * The response body grew past the client's cap (SUPPORT_API_MAX_RESPONSE_BYTES) and its read was stopped.
 * Not retryable: the same page would be as large again (a smaller SYNC_PAGE_SIZE, or a larger cap, is the
 * fix when a source's pages are legitimately that large).
 */
export class ResponseTooLargeError extends SupportClientError {
  readonly retryable = false;
  readonly status: number;
  readonly maxBytes: number;
  constructor(args: { endpoint: Endpoint; status: number; maxBytes: number }) {
    super(
      args.endpoint,
      `${args.endpoint}: HTTP ${args.status} response body is larger than ${args.maxBytes} bytes` +
        ' (SUPPORT_API_MAX_RESPONSE_BYTES): read stopped',
    );
    this.status = args.status;
    this.maxBytes = args.maxBytes;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), status: this.status, maxBytes: this.maxBytes };
  }
}

/**
 * The server answered with a redirect. The API answers in place, so the client never follows one: a
 * redirect means SUPPORT_API_URL points at something else (a login page, a moved service), and following
 * it would send the key to wherever the server chose. Not retryable.
 */
export class RedirectRefusedError extends SupportClientError {
  readonly retryable = false;
  readonly status: number;
  /** The `Location` header, scrubbed and cut (see server-text.ts). */
  readonly location: string;
  constructor(args: { endpoint: Endpoint; status: number; location: string }) {
    super(
      args.endpoint,
      `${args.endpoint}: HTTP ${args.status} redirect to ${JSON.stringify(args.location)} not followed` +
        ' (the API answers in place: check SUPPORT_API_URL)',
    );
    this.status = args.status;
    this.location = args.location;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), status: this.status, location: this.location };
  }
}

/**
 * The rate governor (mode `throw`) or a 429 says: do not send now, come back in `retryAfterMs`. The
 * pipeline turns it into `ApplicationFailure.create({ type: 'RateLimited', nextRetryDelay: retryAfterMs })`.
 */
export class RateLimitedError extends SupportClientError {
  readonly retryable = true;
  readonly routeClass: string;
  readonly retryAfterMs: number;
  readonly reason: string;
  /** The 429 response's error when the server said so; undefined when the governor decided ahead of time. */
  readonly apiError: SupportApiError | undefined;
  constructor(args: {
    endpoint: Endpoint;
    routeClass: string;
    retryAfterMs: number;
    reason: string;
    apiError?: SupportApiError | undefined;
  }) {
    super(
      args.endpoint,
      `${args.endpoint}: rate limited on class ${args.routeClass} (${args.reason}); retry in ${args.retryAfterMs} ms`,
    );
    this.routeClass = args.routeClass;
    this.retryAfterMs = args.retryAfterMs;
    this.reason = args.reason;
    this.apiError = args.apiError;
  }
  override toJSON(): Record<string, unknown> {
    return {
      ...super.toJSON(),
      routeClass: this.routeClass,
      retryAfterMs: this.retryAfterMs,
      reason: this.reason,
      requestId: this.apiError?.requestId,
    };
  }
}

/**
 * A request that carried a cursor got `400 VALIDATION_ERROR`: the cursor is no longer accepted (filters
 * changed, expired, server-side invalidation). The caller must restart its window from the start (null
 * cursor); skipping ahead would lose data. Not retryable with the same cursor.
 */
export class CursorRejectedError extends SupportClientError {
  readonly retryable = false;
  readonly cursor: string;
  readonly apiError: SupportApiError;
  constructor(endpoint: Endpoint, cursor: string, apiError: SupportApiError) {
    super(
      endpoint,
      `${endpoint}: cursor rejected by the API (${apiError.code}, request_id ${apiError.requestId}); restart the window`,
      {
        cause: apiError,
      },
    );
    this.cursor = cursor;
    this.apiError = apiError;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), code: this.apiError.code, requestId: this.apiError.requestId };
  }
}

/** The API returned a cursor it had already returned in this crawl: paging would never end. */
export class CursorLoopError extends SupportClientError {
  readonly retryable = false;
  readonly cursor: string;
  constructor(endpoint: Endpoint, cursor: string) {
    super(
      endpoint,
      `${endpoint}: the API returned cursor ${JSON.stringify(cursor.slice(0, 80))} twice; stopping`,
    );
    this.cursor = cursor;
  }
}

/** The signed upload URL (not the API) refused the bytes of an attachment (spec 4.7 step 2). */
export class UploadError extends SupportClientError {
  readonly status: number;
  readonly retryable: boolean;
  readonly body: string;
  constructor(endpoint: Endpoint, status: number, body: string) {
    super(endpoint, `${endpoint}: upload refused with HTTP ${status}: ${body}`);
    this.status = status;
    this.body = body;
    this.retryable = status >= 500 || status === 429;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), status: this.status, body: this.body };
  }
}

/** Whether a retry of the same request can succeed (429, 5xx, network, timeouts, garbled bodies). */
export function isRetryable(err: unknown): boolean {
  return err instanceof SupportClientError ? err.retryable : false;
}

/**
 * The delay the server asked for, in ms: `RateLimitedError.retryAfterMs`, or a 429/503's `Retry-After`.
 * Undefined when the server expressed no preference (use your own backoff).
 */
export function retryDelayMs(err: unknown): number | undefined {
  if (err instanceof RateLimitedError) return err.retryAfterMs;
  if (err instanceof SupportApiError && err.retryAfterSeconds !== undefined)
    return err.retryAfterSeconds * 1000;
  return undefined;
}

/**
 * What a caller that owns retries (a Temporal activity) needs to know about a failure, without this
 * module depending on Temporal: `type` for `ApplicationFailure.create({ type })`, whether to retry, the
 * server's requested delay (`nextRetryDelay`), and the API's `code` and `request_id` for the message.
 */
export interface FailureDescription {
  type: string;
  message: string;
  retryable: boolean;
  nextRetryDelayMs: number | undefined;
  code: string | undefined;
  requestId: string | undefined;
  details: Record<string, unknown>;
}

function apiErrorOf(err: SupportClientError): SupportApiError | undefined {
  if (err instanceof SupportApiError) return err;
  if (err instanceof CursorRejectedError || err instanceof RateLimitedError) return err.apiError;
  return undefined;
}

export function describeFailure(err: unknown): FailureDescription {
  if (err instanceof SupportClientError) {
    const api = apiErrorOf(err);
    return {
      type: err instanceof RateLimitedError ? 'RateLimited' : err.name,
      message: err.message,
      retryable: err.retryable,
      nextRetryDelayMs: retryDelayMs(err),
      code: api?.code ?? (err instanceof TransportError ? err.code : undefined),
      requestId: api?.requestId,
      details: err.toJSON(),
    };
  }
  return {
    type: err instanceof Error ? err.name : 'Error',
    message: err instanceof Error ? err.message : String(err),
    retryable: true,
    nextRetryDelayMs: undefined,
    code: undefined,
    requestId: undefined,
    details: {},
  };
}
