import type { Surface } from '../http/app.js';
import type { Reply, RequestContext, Route } from '../http/context.js';
import { mustKey, requireScope } from '../http/context.js';
import { ApiError, validation } from '../http/errors.js';
import { iso } from '../http/instants.js';
import type { CompanionState } from '../state.js';
import type { ApiKeyRecord, Scope, TicketRecord } from '../world/index.js';

/** Spec 9.2: removed on 2026-10-31. */
export const LEGACY_SUNSET = Date.parse('2026-10-31T00:00:00Z');
const SUNSET_HTTP_DATE = new Date(LEGACY_SUNSET).toUTCString();

function legacyTicket(t: TicketRecord) {
  return {
    id: t.number,
    subject: t.subject,
    status: t.status,
    channel: t.channel,
    created_at: iso(t.createdAt),
  };
}

/**
 * The deprecated surface under `{base}/public` (spec 9), small but correct: varied envelopes, offset pages,
 * ad-hoc filters, and after the sunset (by the companion clock) 410 with the successor link.
 */
export function legacySurface(s: CompanionState): Surface {
  const successorFor = (route: Route | null): string => {
    const base = `${s.baseUrl}/public/v1`;
    if (!route) return base;
    if (route.path === '/tickets' && route.method === 'GET') return `${base}/views`;
    if (route.path === '/tickets/:id') return `${base}/tickets/{ticketNumber}`;
    if (route.path === '/tickets') return `${base}/tickets`;
    return base;
  };
  /**
   * A legacy route: after the sunset (by the companion clock) 410 with the successor link; before it, the key
   * must hold the route's scope (the surface mounts with scope `any`, so each route checks its own).
   */
  const legacyRoute = (
    method: string,
    path: string,
    scope: Scope,
    handler: (ctx: RequestContext, key: ApiKeyRecord) => Reply,
  ): Route => ({
    method,
    path,
    routeClass: 'legacy',
    scope: 'any',
    handler: (ctx) => {
      if (s.now() >= LEGACY_SUNSET)
        throw new ApiError(
          410,
          'NOT_FOUND',
          'this legacy endpoint was removed on 2026-10-31; use /public/v1',
        );
      const key = mustKey(ctx);
      requireScope(key, scope);
      return handler(ctx, key);
    },
  });
  const list = (items: TicketRecord[], ctx: RequestContext): Reply => {
    const page = Number(ctx.query['page'] ?? '1');
    const size = Number(ctx.query['page_size'] ?? '25');
    if (!Number.isInteger(page) || page < 1 || !Number.isInteger(size) || size < 1 || size > 100) {
      throw validation('page must be ≥ 1 and page_size 1–100');
    }
    const total = Math.max(1, Math.ceil(items.length / size));
    return {
      status: 200,
      body: {
        success: true,
        tickets: items.slice((page - 1) * size, page * size).map(legacyTicket),
        page,
        total_pages: total,
      },
    };
  };
  const routes: Route[] = [
    legacyRoute('GET', '/tickets', 'tickets:read', (ctx, key) => {
      const items = [...s.world.ticketsSorted(key.orgId)]
        .reverse()
        .filter((t) => t.deletedAt === null)
        .filter((t) => ctx.query['status'] === undefined || t.status === ctx.query['status'])
        .filter((t) => ctx.query['channel'] === undefined || t.channel === ctx.query['channel']);
      return list(items, ctx);
    }),
    legacyRoute('GET', '/tickets/statistics', 'analytics:read', (_ctx, key) => {
      const counts: Record<string, number> = {};
      for (const t of s.world.ticketsSorted(key.orgId))
        if (t.deletedAt === null) counts[t.status] = (counts[t.status] ?? 0) + 1;
      return { status: 200, body: { success: true, statistics: counts } };
    }),
    legacyRoute('GET', '/tickets/:id', 'tickets:read', (ctx, key) => {
      const t = s.world.ticketByNumber(Number(ctx.params['id']), key.orgId);
      if (!t || t.deletedAt !== null) throw new ApiError(404, 'TICKET_NOT_FOUND', 'Ticket not found');
      return { status: 200, body: { success: true, ticket: legacyTicket(t) } };
    }),
    legacyRoute('POST', '/tickets/export', 'tickets:export', (_ctx, key) => {
      const items = s.world.ticketsSorted(key.orgId).filter((t) => t.deletedAt === null);
      return {
        status: 200,
        body: { success: true, tickets: items.map(legacyTicket), total: items.length },
      };
    }),
    legacyRoute('GET', '/agents/metrics', 'analytics:read', (_ctx, key) => {
      const agents = s.world.agents.filter((a) => a.orgId === key.orgId && a.deletedAt === null);
      const solved = new Map<string, number>();
      for (const t of s.world.ticketsSorted(key.orgId)) {
        if (t.resolvedBy !== null && t.deletedAt === null)
          solved.set(t.resolvedBy, (solved.get(t.resolvedBy) ?? 0) + 1);
      }
      return {
        status: 200,
        body: {
          success: true,
          agents: agents.map((a) => ({ id: a.id, name: a.name, resolved: solved.get(a.id) ?? 0 })),
        },
      };
    }),
  ];
  return {
    prefix: '/public',
    routes,
    faults: true,
    decorate: (reply, route) => ({
      ...reply,
      headers: {
        ...reply.headers,
        deprecation: 'true',
        sunset: SUNSET_HTTP_DATE,
        link: `<${successorFor(route)}>; rel="successor-version"`,
      },
    }),
    errorBody: (e) => ({
      success: false,
      error: e.status === 410 ? 'gone' : e.code.toLowerCase(),
      message: e.message,
    }),
  };
}
