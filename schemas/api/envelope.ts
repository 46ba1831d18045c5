import { z } from 'zod';

/**
 * The longest cursor taken. A cursor goes into the next request's URL (servers refuse URLs past ~8 KB),
 * into the checkpoint and into Temporal's history with every page: a page whose cursor is longer breaks
 * the schema (a clear, non-retryable error naming the field) rather than bloating all three.
 */
export const MAX_CURSOR_CHARS = 4096;

/**
 * What a cursor may not hold: control characters (PostgreSQL refuses U+0000 in text, so its checkpoint could
 * never be written and the write would be retried until the source's patience ends; the others would reach
 * a URL, a log and a terminal) and surrogates not in a pair (not text: stored, they would come back changed).
 */
const NOT_CURSOR_TEXT = /[\p{Cc}\p{Cs}]/u;

/** A cursor as the API hands it back: opaque, but text of a bounded length a URL and a checkpoint can hold. */
export const Cursor = z
  .string()
  .min(1)
  .max(MAX_CURSOR_CHARS)
  .refine((c) => !NOT_CURSOR_TEXT.test(c), {
    message: 'holds a control character or a lone surrogate, which a cursor never does',
  });

/** `pagination` of a cursor list (spec 2.1). `has_more: true` always comes with a cursor. */
export const Pagination = z
  .object({ has_more: z.boolean(), next_cursor: Cursor.nullable() })
  .refine((p) => !p.has_more || p.next_cursor !== null, {
    message: 'has_more is true but next_cursor is null',
    path: ['next_cursor'],
  });
export type Pagination = z.infer<typeof Pagination>;

/** Success with a cursor list (spec 2.1). */
export function pageEnvelope<T extends z.ZodType>(item: T) {
  return z.object({ success: z.literal(true), data: z.array(item), pagination: Pagination });
}

/** Success with a cursor list and a `meta` object (the two exports, spec 2.7 and 2.8). */
export function exportEnvelope<T extends z.ZodType, M extends z.ZodType>(item: T, meta: M) {
  return z.object({ success: z.literal(true), data: z.array(item), pagination: Pagination, meta });
}

/** Error codes of spec 7. Clients branch on `code`, never on `message`. */
export const SpecErrorCode = z.enum([
  'API_KEY_REQUIRED',
  'INVALID_API_KEY',
  'FORBIDDEN_SCOPE',
  'VALIDATION_ERROR',
  'VIEW_NOT_FOUND',
  'TICKET_NOT_FOUND',
  'ATTACHMENT_NOT_FOUND',
  'IDEMPOTENCY_KEY_CONFLICT',
  'IDEMPOTENCY_KEY_IN_PROGRESS',
  'RATE_LIMIT_EXCEEDED',
]);
export type SpecErrorCode = z.infer<typeof SpecErrorCode>;

/**
 * Codes a real service also needs where the spec is silent ("not shown"): an unknown route, an internal
 * failure, a dependency being down. Our choice; see companion/README.md.
 */
export const ExtraErrorCode = z.enum([
  'NOT_FOUND',
  'METHOD_NOT_ALLOWED',
  'INTERNAL_ERROR',
  'SERVICE_UNAVAILABLE',
]);
export const ErrorCode = z.union([SpecErrorCode, ExtraErrorCode]);
export type ErrorCode = z.infer<typeof ErrorCode>;

/**
 * The error envelope (spec 2.1). `code` is kept as an open string on the reading side so that a code added
 * by a later server version is still reported instead of failing the parse.
 */
export const ErrorEnvelope = z.object({
  success: z.literal(false),
  code: z.string().min(1),
  message: z.string(),
  request_id: z.string().min(1),
  retry_after: z.number().int().nonnegative().optional(),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;
