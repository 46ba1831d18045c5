/**
 * Route classes of the rate limits (spec 8) and the class of every endpoint.
 *
 * Spec 8 names four classes (list, detail, write, analytics) and says the tiers of tags, teams, agents,
 * attachments and ticket update are "not shown". Our choice, kept in this one table:
 * - `ticket_update` (`POST /tickets/:n`): its own class, starting at the write limit (30/min);
 * - `directory` (`GET /tags`, `GET /teams`, `GET /agents`, `POST /tags`): its own class, starting at 60/min;
 * - `attachments` (`POST /attachments/upload-url`, `POST /attachments/:id/confirm`): its own class, 30/min.
 * The starting limits only matter until the first response: from then on the governor follows the
 * server's `X-RateLimit-*` headers, whatever the class's real tier and window are. If a server puts two of
 * our classes in one bucket, map them to one class here (a single line change).
 */
export const ROUTE_CLASSES = [
  'list',
  'detail',
  'write',
  'analytics',
  'ticket_update',
  'directory',
  'attachments',
] as const;
export type RouteClass = (typeof ROUTE_CLASSES)[number];

/** Starting limits per class: requests per window of `windowMs` (spec 8: per minute). */
export const SPEC_LIMITS: Record<RouteClass, { limit: number; windowMs: number }> = {
  list: { limit: 60, windowMs: 60_000 },
  detail: { limit: 120, windowMs: 60_000 },
  write: { limit: 30, windowMs: 60_000 },
  analytics: { limit: 10, windowMs: 60_000 },
  ticket_update: { limit: 30, windowMs: 60_000 },
  directory: { limit: 60, windowMs: 60_000 },
  attachments: { limit: 30, windowMs: 60_000 },
};

/** The class of a request to the v1 API, by method and path relative to `/public/v1`. */
export function routeClassFor(method: string, path: string): RouteClass {
  const m = method.toUpperCase();
  const p = path.split('?')[0]!.replace(/\/+$/, '');
  if (p === '/reports/query' || p === '/csat-surveys' || p === '/agent-sessions') return 'analytics';
  if (p === '/tickets' || p === '/views' || p === '/reports/metrics') return m === 'GET' ? 'list' : 'write';
  if (/^\/tickets\/[^/]+\/messages$/.test(p)) return m === 'GET' ? 'detail' : 'write';
  if (/^\/tickets\/[^/]+$/.test(p)) return m === 'GET' ? 'detail' : 'ticket_update';
  if (p === '/health') return 'detail';
  if (p === '/tags' || p === '/teams' || p === '/agents') return 'directory';
  if (p.startsWith('/attachments/')) return 'attachments';
  return 'detail';
}
