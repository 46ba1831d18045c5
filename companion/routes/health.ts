import type { Health } from '../../schemas/api/index.js';
import { noQuery, type Route } from '../http/context.js';
import { iso } from '../http/instants.js';
import type { CompanionState } from '../state.js';

export function healthRoutes(s: CompanionState): Route[] {
  return [
    {
      method: 'GET',
      path: '/health',
      routeClass: 'detail',
      scope: null,
      handler: (ctx) => {
        noQuery(ctx);
        const data: Health = { status: 'ok', version: 'v1', time: iso(s.now()) };
        return { status: 200, body: { success: true, data } };
      },
    },
  ];
}
