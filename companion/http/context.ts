import type { IncomingMessage } from 'node:http';
import type { z } from 'zod';
import type { ApiKeyRecord, Scope } from '../world/index.js';
import { ApiError, forbidden, validation } from './errors.js';
import type { RouteClass } from './rate-limit.js';

/** What a handler returns; the app adds the envelope for errors, rate-limit headers and the request id. */
export interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** Raw body (the upload endpoint and file downloads); `body` is ignored then. */
  raw?: { contentType: string; data: Buffer | string };
}

export interface RequestContext {
  req: IncomingMessage;
  requestId: string;
  params: Record<string, string>;
  query: Record<string, string>;
  /** Query keys repeated in the URL (rejected by `parseQuery`). */
  repeatedQuery: string[];
  key: ApiKeyRecord | null;
  /** Raw request body (empty buffer when none). */
  body: Buffer;
  ip: string;
}

export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

export interface Route {
  method: string;
  /** Path under the surface's prefix, segments starting with `:` capture. */
  path: string;
  routeClass: RouteClass | null;
  /** Null = no key needed (health, the upload PUT). */
  scope: Scope | null | 'any';
  handler: Handler;
}

export function hasScope(key: ApiKeyRecord, scope: Scope): boolean {
  return key.scopes === null || key.scopes.includes(scope);
}

export function requireScope(key: ApiKeyRecord, scope: Scope): void {
  if (!hasScope(key, scope)) throw forbidden(`this key lacks the ${scope} scope`);
}

export function mustKey(ctx: RequestContext): ApiKeyRecord {
  if (!ctx.key) throw new ApiError(401, 'API_KEY_REQUIRED', 'cx-api-key header is required');
  return ctx.key;
}

/**
 * A route whose handler acts for the calling key: the app has already answered 401 without a valid key and 403
 * without `scope` (`'any'`: the handler checks scopes itself), so the handler is given the key.
 */
export function keyedRoute(
  method: string,
  path: string,
  routeClass: RouteClass,
  scope: Scope | 'any',
  handler: (ctx: RequestContext, key: ApiKeyRecord) => Reply | Promise<Reply>,
): Route {
  return { method, path, routeClass, scope, handler: (ctx) => handler(ctx, mustKey(ctx)) };
}

function issues(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const path = i.path.join('.');
      if (i.code === 'unrecognized_keys')
        return `unknown field(s): ${i.keys.join(', ')}${path ? ` in ${path}` : ''}`;
      return `${path || '(root)'}: ${i.message}`;
    })
    .join('; ');
}

/** Strict query validation: unknown or repeated parameters give 400 VALIDATION_ERROR. */
export function parseQuery<S extends z.ZodType>(ctx: RequestContext, schema: S): z.infer<S> {
  if (ctx.repeatedQuery.length > 0)
    throw validation(`parameter(s) given more than once: ${ctx.repeatedQuery.join(', ')}`);
  const r = schema.safeParse(ctx.query);
  if (!r.success) throw validation(issues(r.error).replace('unknown field', 'unknown parameter'));
  return r.data;
}

/** Strict JSON body validation (spec 4: bodies accept only the listed fields). */
export function parseBody<S extends z.ZodType>(ctx: RequestContext, schema: S): z.infer<S> {
  const type = ctx.req.headers['content-type'] ?? '';
  if (!/^application\/json\b/i.test(type)) throw validation('Content-Type must be application/json');
  let json: unknown;
  try {
    json = JSON.parse(ctx.body.toString('utf8'));
  } catch {
    throw validation('body is not valid JSON');
  }
  const r = schema.safeParse(json);
  if (!r.success) throw validation(issues(r.error));
  return r.data;
}

export function noQuery(ctx: RequestContext): void {
  const keys = Object.keys(ctx.query);
  if (keys.length > 0) throw validation(`unknown parameter(s): ${keys.join(', ')}`);
}
