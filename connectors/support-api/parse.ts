/**
 * Turning an HTTP response into typed data or a typed error: JSON decoding, the error envelope, and zod
 * validation of success envelopes, with item-level reporting (index, id, field path) for lists.
 */
import { z } from 'zod';
import { type DriftObservation, driftOf } from '../../schemas/api/drift.js';
import { ErrorEnvelope, Pagination } from '../../schemas/api/envelope.js';
import { type Endpoint, ResponseFormatError, SchemaViolationError, SupportApiError } from './errors.js';
import { parseRetryAfter } from './rate-governor.js';
import { type Scrubber, SERVER_TEXT_LIMITS, serverText } from './server-text.js';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function headerValue(headers: RawResponse['headers'], name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * Text of a JSON body (or of a message quoting one) with every string value replaced by `"…"`, keys and
 * punctuation kept: enough to see what the body was (the API's envelope, cut short), never the items'
 * text, which can be personal data the column policy keeps out of logs and errors.
 */
export function jsonStructureOnly(text: string): string {
  // Keys (a string followed by a colon) stay; a string cut off by the end of the text is a value too.
  return text.replace(/"(?:[^"\\]|\\.)*("\s*:|"|$)/g, (string, end: string) =>
    end.endsWith(':') ? string : '"…"',
  );
}

/** Decodes the body as JSON, or throws `ResponseFormatError` saying what it was instead. */
export function decodeJson(endpoint: Endpoint, res: RawResponse, key: Scrubber): unknown {
  const contentType = headerValue(res.headers, 'content-type');
  // An HTML or text page is shown as it starts (a proxy's error page); anything JSON-like by its structure.
  const snippet = bodySnippet(res.text, key);
  const fail = (problem: string) =>
    new ResponseFormatError({ endpoint, status: res.status, contentType, problem, bodySnippet: snippet });
  const trimmed = res.text.trimStart();
  if (trimmed === '') throw fail('empty body');
  if (trimmed.startsWith('<')) throw fail('an HTML/XML page instead of JSON (proxy or gateway page?)');
  try {
    return JSON.parse(res.text);
  } catch (err) {
    // V8's message quotes the text around the error: only its structure is kept (see jsonStructureOnly).
    const detail = jsonStructureOnly(err instanceof Error ? err.message : String(err));
    throw fail(
      `invalid or truncated JSON (${serverText(detail, key, SERVER_TEXT_LIMITS.message)}; ${res.text.length} chars received)`,
    );
  }
}

/**
 * How a body starts, for an error: JSON by its structure only, the whole text cleaned and scrubbed of the
 * key before it is cut (serverText; a head cut first could end inside the key). The body cap bounds it.
 */
function bodySnippet(text: string, key: Scrubber): string {
  const shown = /^\s*[[{]/.test(text.slice(0, 64)) ? jsonStructureOnly(text) : text;
  return serverText(shown, key, SERVER_TEXT_LIMITS.snippet);
}

/** Throws `SupportApiError` for an error envelope, `ResponseFormatError` for a non-envelope error body. */
export function throwIfError(
  endpoint: Endpoint,
  res: RawResponse,
  json: unknown,
  key: Scrubber,
  now: number,
): void {
  const isErrorStatus = res.status >= 400;
  const looksLikeError =
    typeof json === 'object' && json !== null && (json as { success?: unknown }).success === false;
  if (!isErrorStatus && !looksLikeError) return;
  const parsed = ErrorEnvelope.safeParse(json);
  if (!parsed.success) {
    throw new ResponseFormatError({
      endpoint,
      status: res.status,
      contentType: headerValue(res.headers, 'content-type'),
      problem: `error response without the API's error envelope (${serverText(formatIssues(parsed.error.issues), key, SERVER_TEXT_LIMITS.message)})`,
      bodySnippet: bodySnippet(JSON.stringify(json), key),
    });
  }
  const env = parsed.data;
  const headerMs = parseRetryAfter(headerValue(res.headers, 'retry-after'), now);
  const retryAfterSeconds = headerMs !== undefined ? headerMs / 1000 : env.retry_after;
  throw new SupportApiError({
    endpoint,
    status: res.status,
    code: serverText(env.code, key, SERVER_TEXT_LIMITS.code),
    message: serverText(env.message, key, SERVER_TEXT_LIMITS.message),
    requestId: serverText(env.request_id, key, SERVER_TEXT_LIMITS.requestId),
    retryAfterSeconds,
  });
}

export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out === '' ? String(p) : `.${String(p)}`;
  }
  return out;
}

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 3)
    .map((i) => `${formatPath(i.path) || '(root)'}: ${i.message}`)
    .join('; ');
}

/** Removes the key from every text of a violation (a broken server could echo it in an id or value). */
export function scrubViolation(err: SchemaViolationError, key: Scrubber): SchemaViolationError {
  return new SchemaViolationError(
    err.endpoint,
    err.status,
    err.issues.map((i) => ({
      itemIndex: i.itemIndex,
      itemId: i.itemId === undefined ? undefined : serverText(i.itemId, key, SERVER_TEXT_LIMITS.requestId),
      path: serverText(i.path, key, SERVER_TEXT_LIMITS.location),
      message: serverText(i.message, key, SERVER_TEXT_LIMITS.message),
    })),
  );
}

/**
 * A rejected item's reason and id made safe to show and keep (serverText). Its raw JSON is kept as the source
 * sent it: the client scrubbed the secrets from the whole answer already (echoed-secrets.ts).
 */
export function scrubRejected(r: InvalidItem, key: Scrubber): InvalidItem {
  return {
    index: r.index,
    itemId: r.itemId === undefined ? undefined : serverText(r.itemId, key, SERVER_TEXT_LIMITS.requestId),
    raw: r.raw,
    reason: serverText(r.reason, key, SERVER_TEXT_LIMITS.message),
  };
}

/**
 * A drift observation's texts made safe to show and keep (serverText): a field named with an escape
 * sequence is kept and shown with the escape visible, never acting on the terminal that `status` prints to.
 */
export function scrubDrift(o: DriftObservation, key: Scrubber): DriftObservation {
  const safe = (text: string) => serverText(text, key, SERVER_TEXT_LIMITS.drift);
  return {
    ...o,
    fieldPath: safe(o.fieldPath),
    observed: safe(o.observed),
    expected: o.expected === null ? null : safe(o.expected),
    example: safe(o.example),
    label: o.label === null ? null : safe(o.label),
  };
}

function itemIdOf(raw: unknown): string | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const id = (raw as { id?: unknown }).id;
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined;
}

/** `{success: true, data}` with `data` of `schema`. */
export function parseSingle<S extends z.ZodType>(
  endpoint: Endpoint,
  status: number,
  json: unknown,
  schema: S,
): z.infer<S> {
  const env = z.object({ success: z.literal(true), data: z.unknown() }).safeParse(json);
  if (!env.success) throw violation(endpoint, status, env.error.issues, undefined, undefined, []);
  const data = schema.safeParse(env.data.data);
  if (!data.success)
    throw violation(endpoint, status, data.error.issues, undefined, itemIdOf(env.data.data), ['data']);
  return data.data;
}

/** An array in `data` (unpaginated list, e.g. the metric catalog), validated item by item. */
export function parseArray<S extends z.ZodType>(
  endpoint: Endpoint,
  status: number,
  json: unknown,
  item: S,
): ParsedItems<z.infer<S>> {
  const env = z.object({ success: z.literal(true), data: z.array(z.unknown()) }).safeParse(json);
  if (!env.success) throw violation(endpoint, status, env.error.issues, undefined, undefined, []);
  return parseItems(env.data.data, item);
}

/**
 * An item of a list that breaks what the spec defines strictly (schemas/api/open.ts): it cannot be stored
 * faithfully, so the caller sets it aside (`_rejected`) and stores the rest of its page.
 */
export interface InvalidItem {
  /** Index in `data`. */
  index: number;
  /** The item's `id` if it had one (string or number), as text. */
  itemId: string | undefined;
  /** The item as received. */
  raw: unknown;
  /** Which fields broke which rule, e.g. `score: Too big: expected number to be <=5`. */
  reason: string;
}

export interface ParsedItems<T> {
  items: T[];
  /** `rawItems[i]` is the JSON object `items[i]` was parsed from. */
  rawItems: Record<string, unknown>[];
  rejected: InvalidItem[];
  /** What the stored items hold that their schema does not know (schemas/api/drift.ts), per page. */
  drift: DriftObservation[];
}

/** Validates each item on its own: one bad item never costs the others (they are returned, it is rejected). */
function parseItems<S extends z.ZodType>(raw: unknown[], item: S): ParsedItems<z.infer<S>> {
  const items: z.infer<S>[] = [];
  const rawItems: Record<string, unknown>[] = [];
  const rejected: InvalidItem[] = [];
  raw.forEach((r, index) => {
    const parsed = item.safeParse(r);
    if (parsed.success) {
      items.push(parsed.data);
      rawItems.push(r as Record<string, unknown>);
    } else {
      rejected.push({ index, itemId: itemIdOf(r), raw: r, reason: formatIssues(parsed.error.issues) });
    }
  });
  return { items, rawItems, rejected, drift: driftOf(item, rawItems) };
}

export interface ParsedPage<T, M> extends ParsedItems<T> {
  hasMore: boolean;
  nextCursor: string | null;
  meta: M | undefined;
}

/** A cursor page: `data[]` + `pagination` (+ `meta` when a meta schema is given). */
export function parsePage<S extends z.ZodType, M extends z.ZodType | undefined>(
  endpoint: Endpoint,
  status: number,
  json: unknown,
  item: S,
  meta: M,
): ParsedPage<z.infer<S>, M extends z.ZodType ? z.infer<M> : undefined> {
  const envSchema = z.object({
    success: z.literal(true),
    data: z.array(z.unknown()),
    pagination: Pagination,
    ...(meta ? { meta } : {}),
  });
  const env = envSchema.safeParse(json);
  if (!env.success) throw violation(endpoint, status, env.error.issues, undefined, undefined, []);
  const { items, rawItems, rejected, drift } = parseItems(env.data.data, item);
  const value = env.data as { pagination: { has_more: boolean; next_cursor: string | null }; meta?: unknown };
  return {
    items,
    rawItems,
    rejected,
    drift,
    hasMore: value.pagination.has_more,
    nextCursor: value.pagination.next_cursor,
    meta: value.meta as M extends z.ZodType ? z.infer<M> : undefined,
  };
}

function violation(
  endpoint: Endpoint,
  status: number,
  zodIssues: readonly z.core.$ZodIssue[],
  itemIndex: number | undefined,
  itemId: string | undefined,
  prefix: PropertyKey[],
): SchemaViolationError {
  return new SchemaViolationError(
    endpoint,
    status,
    zodIssues.map((i) => ({
      itemIndex,
      itemId,
      path: formatPath([...prefix, ...i.path]),
      message: i.message,
    })),
  );
}
