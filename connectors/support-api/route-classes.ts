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
import { STREAMS, type StreamRegistry } from '../../schemas/streams.js';

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

/** Endpoints as spec 4 writes them (`GET /tickets/:ticketNumber`), each with its class. */
export type Routes = Readonly<Record<string, RouteClass>>;

/** The endpoints the streams read: their class is the one their stream declares (schemas/streams.ts). */
export function streamRoutes(registry: StreamRegistry): Routes {
  return Object.fromEntries(Object.values(registry).map((stream) => [stream.endpoint, stream.routeClass]));
}

/** The endpoints no stream reads (spec 4): single reads, writes, health. */
const OTHER_ROUTES: Routes = {
  'GET /tickets/:ticketNumber': 'detail',
  'GET /health': 'detail',
  // Not in the spec (schemas/api/identity.ts): a single read, like the other detail routes.
  'GET /me': 'detail',
  'POST /tickets': 'write',
  'POST /tickets/:ticketNumber/messages': 'write',
  'POST /tickets/:ticketNumber': 'ticket_update',
  'POST /tags': 'directory',
  'POST /attachments/upload-url': 'attachments',
  'POST /attachments/:attachmentId/confirm': 'attachments',
};

/** Every endpoint of the API with its class. */
export const ROUTES: Routes = { ...streamRoutes(STREAMS), ...OTHER_ROUTES };

/**
 * Classifies requests to the v1 API (method, path relative to `/public/v1`) by `routes`. A path the spec
 * does not list counts as `detail`, the class with the largest budget.
 */
export function classifierOf(routes: Routes): (method: string, path: string) => RouteClass {
  // `:name` in an endpoint is one path segment.
  const patterns = Object.entries(routes).map(([endpoint, routeClass]) => ({
    pattern: new RegExp(`^${endpoint.replace(/:[^/]+/g, '[^/]+')}$`),
    routeClass,
  }));
  return (method, path) => {
    const request = `${method.toUpperCase()} ${path.split('?')[0]!.replace(/\/+$/, '')}`;
    return patterns.find(({ pattern }) => pattern.test(request))?.routeClass ?? 'detail';
  };
}

/** The class of a request to the v1 API, by method and path relative to `/public/v1`. */
export const routeClassFor = classifierOf(ROUTES);
