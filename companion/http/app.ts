import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CompanionState } from '../state.js';
import { type Reply, type RequestContext, type Route, requireScope } from './context.js';
import { ApiError } from './errors.js';
import { type FaultInjector, PROXY_ERROR_HTML } from './faults.js';
import type { RateLimiter } from './rate-limit.js';
import { ROUTE_CLASSES, type RouteClass } from './rate-limit.js';

export interface RequestLogEntry {
  at: string;
  method: string;
  path: string;
  query: Record<string, string>;
  routeClass: RouteClass | null;
  keyLabel: string | null;
  status: number;
  requestId: string;
}

/** A mounted group of routes under a prefix (`/public/v1`, `/public`, or the upload host paths). */
export interface Surface {
  prefix: string;
  routes: Route[];
  /** Wraps replies of this surface (legacy headers, legacy error shape). */
  decorate?: (reply: Reply, route: Route | null) => Reply;
  errorBody?: (e: ApiError, requestId: string) => unknown;
  /** Faults apply to API surfaces only. */
  faults: boolean;
}

interface Matched {
  route: Route;
  params: Record<string, string>;
}

function match(routes: Route[], method: string, path: string): Matched | 'method' | null {
  const segs = path.split('/').filter((x) => x.length > 0);
  let methodMismatch = false;
  for (const route of routes) {
    const rs = route.path.split('/').filter((x) => x.length > 0);
    if (rs.length !== segs.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < rs.length; i++) {
      const r = rs[i] as string;
      const s = segs[i] as string;
      if (r.startsWith(':')) params[r.slice(1)] = decodeURIComponent(s);
      else if (r !== s) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    if (route.method !== method) {
      methodMismatch = true;
      continue;
    }
    return { route, params };
  }
  return methodMismatch ? 'method' : null;
}

const MAX_BODY = 25 * 1024 * 1024;

function readBody(req: IncomingMessage): Promise<Buffer | 'too_large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) tooLarge = true;
      else chunks.push(c);
    });
    req.on('end', () => resolve(tooLarge ? 'too_large' : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The request pipeline: faults → route → identity → rate limit → auth → scope → handler → envelope. */
export class App {
  #seq = 0;
  readonly requestLog: RequestLogEntry[] = [];

  constructor(
    private readonly state: CompanionState,
    private readonly surfaces: Surface[],
    private readonly limiter: RateLimiter,
    private readonly faults: FaultInjector,
  ) {}

  handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.#handle(req, res).catch((e: unknown) => {
      this.state.log.error({ err: e }, 'unhandled');
      if (!res.headersSent) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            success: false,
            code: 'INTERNAL_ERROR',
            message: 'internal error',
            request_id: 'n/a',
          }),
        );
      }
    });
  };

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = `req_${(++this.#seq).toString(36).padStart(6, '0')}_${this.state.world.seed.toString(36)}`;
    const url = new URL(req.url ?? '/', 'http://companion.local');
    const query: Record<string, string> = {};
    const repeated: string[] = [];
    for (const [k, v] of url.searchParams) {
      if (k in query) repeated.push(k);
      query[k] = v;
    }
    const method = req.method ?? 'GET';
    const surface = this.surfaces
      .filter((s) => url.pathname === s.prefix || url.pathname.startsWith(`${s.prefix}/`))
      .sort((a, b) => b.prefix.length - a.prefix.length)[0];
    const log: RequestLogEntry = {
      at: new Date(this.state.now()).toISOString(),
      method,
      path: url.pathname,
      query,
      routeClass: null,
      keyLabel: null,
      status: 0,
      requestId,
    };
    this.requestLog.push(log);
    const headerKey = req.headers['cx-api-key'];
    const keyValue = Array.isArray(headerKey) ? headerKey[0] : headerKey;
    const key = keyValue ? this.state.world.keyByValue(keyValue) : undefined;
    log.keyLabel = key?.label ?? null;
    const send = (reply: Reply) => {
      const headers: Record<string, string> = { 'x-request-id': requestId, ...reply.headers };
      log.status = reply.status;
      if (reply.raw) {
        res.writeHead(reply.status, { ...headers, 'content-type': reply.raw.contentType });
        res.end(reply.raw.data);
      } else {
        res.writeHead(reply.status, { ...headers, 'content-type': 'application/json; charset=utf-8' });
        res.end(reply.status === 204 ? undefined : JSON.stringify(reply.body));
      }
      this.state.log.info(
        {
          requestId,
          method,
          path: url.pathname,
          status: reply.status,
          key: log.keyLabel,
          class: log.routeClass,
        },
        'request',
      );
    };
    const errorReply = (e: ApiError, extraHeaders: Record<string, string> = {}): Reply => ({
      status: e.status,
      headers: { ...extraHeaders, ...e.headers },
      body: surface?.errorBody
        ? surface.errorBody(e, requestId)
        : {
            success: false,
            code: e.code,
            message: e.message,
            request_id: requestId,
            ...(e.retryAfter !== undefined ? { retry_after: e.retryAfter } : {}),
          },
    });
    if (!surface) {
      send(errorReply(new ApiError(404, 'NOT_FOUND', `no route ${method} ${url.pathname}`)));
      return;
    }
    const decorate = (reply: Reply, route: Route | null) =>
      surface.decorate ? surface.decorate(reply, route) : reply;

    if (surface.faults) {
      const rejected = this.state.options.faults?.reject?.find(
        (r) =>
          url.pathname === `${surface.prefix}${r.path}` &&
          Object.entries(r.query ?? {}).every(([k, v]) => url.searchParams.get(k) === v),
      );
      if (rejected) {
        send(
          errorReply(new ApiError(rejected.status, rejected.code, rejected.message ?? 'injected rejection')),
        );
        return;
      }
      const fault = this.faults.next(this.state.options.faults);
      if (fault === 'reset') {
        log.status = 0;
        req.socket.destroy();
        return;
      }
      if (fault === 'html') {
        send({ status: 502, body: null, raw: { contentType: 'text/html', data: PROXY_ERROR_HTML } });
        return;
      }
      if (fault === '5xx') {
        send(errorReply(new ApiError(503, 'SERVICE_UNAVAILABLE', 'injected fault: upstream unavailable')));
        return;
      }
      if (fault === 'slow') await sleep(this.state.options.faults?.slowMs ?? 2000);
    }

    const rel = url.pathname.slice(surface.prefix.length) || '/';
    const m = match(surface.routes, method, rel);
    if (m === null || m === 'method') {
      const e =
        m === 'method'
          ? new ApiError(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on ${url.pathname}`)
          : new ApiError(404, 'NOT_FOUND', `no route ${method} ${url.pathname}`);
      send(decorate(errorReply(e), null));
      return;
    }
    const { route, params } = m;
    log.routeClass = route.routeClass;
    let rateHeaders: Record<string, string> = {};
    if (route.routeClass !== null) {
      const identity = key ? `key:${key.label}` : `ip:${req.socket.remoteAddress ?? 'unknown'}`;
      const d = this.limiter.take(route.routeClass, identity);
      rateHeaders = {
        'x-ratelimit-limit': String(d.limit),
        'x-ratelimit-remaining': String(d.remaining),
        'x-ratelimit-reset': String(d.reset),
      };
      if (!d.allowed) {
        const e = new ApiError(
          429,
          'RATE_LIMIT_EXCEEDED',
          `rate limit of ${d.limit} requests per window exceeded for ${route.routeClass} routes`,
          { 'retry-after': String(d.retryAfterSeconds) },
          d.retryAfterSeconds,
        );
        send(decorate(errorReply(e, rateHeaders), route));
        return;
      }
    }
    try {
      if (route.scope !== null) {
        if (!keyValue) throw new ApiError(401, 'API_KEY_REQUIRED', 'cx-api-key header is required');
        if (!key) throw new ApiError(401, 'INVALID_API_KEY', 'the API key is not valid');
        if (route.scope !== 'any') requireScope(key, route.scope);
      }
      const body = await readBody(req);
      if (body === 'too_large') throw new ApiError(413, 'VALIDATION_ERROR', 'request body too large');
      const ctx: RequestContext = {
        req,
        requestId,
        params,
        query,
        repeatedQuery: repeated,
        key: key ?? null,
        body,
        ip: req.socket.remoteAddress ?? 'unknown',
      };
      const reply = await route.handler(ctx);
      send(decorate({ ...reply, headers: { ...rateHeaders, ...reply.headers } }, route));
    } catch (e) {
      if (e instanceof ApiError) {
        send(decorate(errorReply(e, rateHeaders), route));
        return;
      }
      this.state.log.error({ err: e, requestId }, 'handler failed');
      send(decorate(errorReply(new ApiError(500, 'INTERNAL_ERROR', 'internal error'), rateHeaders), route));
    }
  }
}

export { ROUTE_CLASSES };
