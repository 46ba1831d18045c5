/**
 * Turning an HTTP response into typed data or a typed error: JSON decoding, the error envelope, and zod
 * validation of success envelopes, with item-level reporting (index, id, field path) for lists.
 */
import { z } from 'zod';
import { type DriftObservation, driftOf } from '../../schemas/api/drift.js';
import { ErrorEnvelope, Pagination } from '../../schemas/api/envelope.js';
import { jsonCutAt, jsonDeeperThan, MAX_JSON_DEPTH } from '../../schemas/warehouse/values.js';
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
  // Made only for an error: over a whole page's text, on every page, it was most of the decoding's cost.
  const fail = (problem: string) =>
    new ResponseFormatError({
      endpoint,
      status: res.status,
      contentType,
      problem,
      bodySnippet: bodySnippet(res.text, key),
    });
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
      // The body as received: serialising the decoded JSON again would recurse once per level of nesting.
      bodySnippet: bodySnippet(res.text, key),
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

/*
 * The envelopes are built once, not per response: zod compiles an object schema's fast path on its first
 * parse, so a schema made for each page cost its construction and that compilation on every page (more
 * than the envelope's check itself).
 */
const SINGLE_ENVELOPE = z.object({ success: z.literal(true), data: z.unknown() });
const ARRAY_ENVELOPE = z.object({ success: z.literal(true), data: z.array(z.unknown()) });
const PAGE_ENVELOPE = z.object({
  success: z.literal(true),
  data: z.array(z.unknown()),
  pagination: Pagination,
});
/** A page's envelope with its `meta` schema, one per meta schema (the exports' few). */
const pageEnvelopes = new WeakMap<z.ZodType, typeof PAGE_ENVELOPE>();

/** Typed as the envelope without `meta`: parsePage reads `meta` off the parsed value itself. */
function pageEnvelopeOf(meta: z.ZodType | undefined): typeof PAGE_ENVELOPE {
  if (!meta) return PAGE_ENVELOPE;
  let envelope = pageEnvelopes.get(meta);
  if (!envelope) {
    envelope = PAGE_ENVELOPE.extend({ meta }) as unknown as typeof PAGE_ENVELOPE;
    pageEnvelopes.set(meta, envelope);
  }
  return envelope;
}

/** `{success: true, data}` with `data` of `schema`. */
export function parseSingle<S extends z.ZodType>(
  endpoint: Endpoint,
  status: number,
  json: unknown,
  schema: S,
): z.infer<S> {
  const env = SINGLE_ENVELOPE.safeParse(json);
  if (!env.success) throw violation(endpoint, status, env.error.issues, undefined, undefined, []);
  const data = schema.safeParse(env.data.data);
  if (!data.success)
    throw violation(endpoint, status, data.error.issues, undefined, itemIdOf(env.data.data), ['data']);
  return data.data;
}

/**
 * The most items an unpaginated list (the metric catalog: tens of metrics) may hold; a larger one is refused
 * whole, like a page over its request's limit. Without it a source answering millions of bare numbers would
 * cost a zod check per item: about 40 bytes of heap per byte of page (bench/page-memory.ts).
 */
export const MAX_UNPAGINATED_ITEMS = 10_000;

/** An array in `data` (unpaginated list, e.g. the metric catalog), validated item by item. */
export function parseArray<S extends z.ZodType>(
  endpoint: Endpoint,
  status: number,
  json: unknown,
  item: S,
): ParsedItems<z.infer<S>> {
  refuseOverLimit(endpoint, status, json, MAX_UNPAGINATED_ITEMS, 'an unpaginated list may hold');
  const env = ARRAY_ENVELOPE.safeParse(json);
  if (!env.success) throw violation(endpoint, status, env.error.issues, undefined, undefined, []);
  return parseItems(env.data.data, item);
}

/**
 * An item of a list that breaks what the spec defines strictly (schemas/api/open.ts), or nests deeper than
 * the warehouse takes: it cannot be stored faithfully, so the caller sets it aside (`_rejected`) and stores
 * the rest of its page.
 */
export interface InvalidItem {
  /** Index in `data`. */
  index: number;
  /** The item's `id` if it had one (string or number), as text. */
  itemId: string | undefined;
  /** The item as received (cut at MAX_JSON_DEPTH levels when it nests deeper). */
  raw: unknown;
  /** Which fields broke which rule, e.g. `score: Too big: expected number to be <=5`. */
  reason: string;
}

/**
 * The JSON depth cap at the reader: an item nested deeper than the warehouse takes (MAX_JSON_DEPTH, in
 * schemas/warehouse/values.ts) is set aside like an item that breaks the spec, kept cut at the cap. It is
 * measured before anything turns the item into text or walks it recursively (a rejected item's JSON, a
 * row's build): past a few thousand levels those end in a stack overflow, which would be retried as
 * transient on every attempt.
 */
export const TOO_DEEP_REASON = `(item): JSON nested deeper than ${MAX_JSON_DEPTH} levels, more than the warehouse takes`;

/**
 * Items set aside that a page keeps, at most (`rejected`, stored in `_rejected`); the rest are counted
 * (`rejectedPastCap`), their reasons not even formatted (a zod error costs microseconds). Work and memory per
 * set-aside item then stop at the cap: a list of millions of bare numbers costs its parse and one check per
 * item, not millions of reasons, copies and `_rejected` rows.
 */
export const MAX_REJECTED_KEPT = 25;

export interface ParsedItems<T> {
  items: T[];
  /** `rawItems[i]` is the JSON object `items[i]` was parsed from. */
  rawItems: Record<string, unknown>[];
  /** The first MAX_REJECTED_KEPT items set aside, in the page's order. */
  rejected: InvalidItem[];
  /** Items set aside past MAX_REJECTED_KEPT: counted, not kept. */
  rejectedPastCap: number;
  /** What the stored items hold that their schema does not know (schemas/api/drift.ts), per page. */
  drift: DriftObservation[];
}

/**
 * Validates each item on its own: one bad item never costs the others (they are returned, it is set
 * aside). Every item's depth is measured (without recursion) before it is kept or set aside.
 */
function parseItems<S extends z.ZodType>(raw: unknown[], item: S): ParsedItems<z.infer<S>> {
  const items: z.infer<S>[] = [];
  const rawItems: Record<string, unknown>[] = [];
  const rejected: InvalidItem[] = [];
  let rejectedPastCap = 0;
  const setAside = (index: number, r: unknown, reason: () => string) => {
    if (rejected.length >= MAX_REJECTED_KEPT) rejectedPastCap += 1;
    else
      rejected.push({
        index,
        itemId: itemIdOf(r),
        raw: jsonDeeperThan(r) ? jsonCutAt(r) : r,
        reason: reason(),
      });
  };
  raw.forEach((r, index) => {
    const parsed = item.safeParse(r);
    if (!parsed.success) setAside(index, r, () => formatIssues(parsed.error.issues));
    else if (jsonDeeperThan(r)) setAside(index, r, () => TOO_DEEP_REASON);
    else {
      items.push(parsed.data);
      rawItems.push(r as Record<string, unknown>);
    }
  });
  return { items, rawItems, rejected, rejectedPastCap, drift: driftOf(item, rawItems) };
}

export interface ParsedPage<T, M> extends ParsedItems<T> {
  hasMore: boolean;
  nextCursor: string | null;
  meta: M | undefined;
}

/**
 * A cursor page: `data[]` + `pagination` (+ `meta` when a meta schema is given). A page holding more items
 * than the request's `limit` is refused whole, as one violation, before any item is looked at: a source that
 * ignores the limit (a page of six million numbers) costs its parse, not a reason and a log line per item.
 */
export function parsePage<S extends z.ZodType, M extends z.ZodType | undefined>(
  endpoint: Endpoint,
  status: number,
  json: unknown,
  item: S,
  meta: M,
  limit?: number,
): ParsedPage<z.infer<S>, M extends z.ZodType ? z.infer<M> : undefined> {
  if (limit !== undefined) refuseOverLimit(endpoint, status, json, limit, "the request's limit");
  const env = pageEnvelopeOf(meta).safeParse(json);
  if (!env.success) throw violation(endpoint, status, env.error.issues, undefined, undefined, []);
  const value = env.data as { pagination: { has_more: boolean; next_cursor: string | null }; meta?: unknown };
  return {
    ...parseItems(env.data.data, item),
    hasMore: value.pagination.has_more,
    nextCursor: value.pagination.next_cursor,
    meta: value.meta as M extends z.ZodType ? z.infer<M> : undefined,
  };
}

/**
 * Throws one violation for a list holding more than `limit` items, before any item is looked at: the page
 * is refused whole, never expanded into a reason (and a log line) per item.
 */
function refuseOverLimit(
  endpoint: Endpoint,
  status: number,
  json: unknown,
  limit: number,
  what: string,
): void {
  const data = (json as { data?: unknown } | null)?.data;
  if (!Array.isArray(data) || data.length <= limit) return;
  throw new SchemaViolationError(endpoint, status, [
    {
      itemIndex: undefined,
      itemId: undefined,
      path: 'data',
      message: `${data.length} items, more than ${what} (${limit}): the page is refused whole`,
    },
  ]);
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
