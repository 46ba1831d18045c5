import { mustKey, type Route } from '../http/context.js';
import { ApiError, forbidden } from '../http/errors.js';
import type { CompanionState } from '../state.js';

/**
 * `GET /reports/metrics` and `POST /reports/query` (spec 4.11–4.12) are issue 6. Auth, scope, class and the
 * linked-agent rule are enforced here; the engine is plugged in through `state.reports` when it exists.
 */
export function reportRoutes(s: CompanionState): Route[] {
  const linked = (ctx: Parameters<Route['handler']>[0]) => {
    const key = mustKey(ctx);
    const agent = key.agentId ? s.world.agent(key.agentId) : undefined;
    if (!agent) throw forbidden('reports require a key linked to a support agent');
    return key;
  };
  const notYet = () =>
    new ApiError(503, 'SERVICE_UNAVAILABLE', 'the report engine is not available in this build');
  return [
    {
      method: 'GET',
      path: '/reports/metrics',
      routeClass: 'list',
      scope: 'analytics:read',
      handler: (ctx) => {
        linked(ctx);
        throw notYet();
      },
    },
    {
      method: 'POST',
      path: '/reports/query',
      routeClass: 'analytics',
      scope: 'analytics:read',
      handler: (ctx) => {
        linked(ctx);
        throw notYet();
      },
    },
  ];
}
