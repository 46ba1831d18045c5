import { VIEW_PAGE_LIMIT, ViewListQuery } from '../../schemas/api/index.js';
import { mustKey, parseQuery, type Route } from '../http/context.js';
import { binding, cmpKey, decodeKeyset, pageReply } from '../rules/paging.js';
import { readable, viewMatches, viewVisible } from '../rules/views.js';
import type { CompanionState } from '../state.js';
import { varyView } from '../variant.js';
import type { TicketRecord, ViewRecord } from '../world/index.js';

/** A view's count from the replica; with replica lag the count is refreshed at most once per lag period. */
function viewCount(s: CompanionState, v: ViewRecord): number {
  const realNow = s.world.settings.realNow();
  const cached = s.viewCounts.get(v.id);
  const lag = s.options.replicaLagMs;
  if (cached && lag > 0 && realNow - cached.at < lag) return cached.count;
  let count = 0;
  for (const t of s.world.ticketsSorted(v.orgId) as TicketRecord[]) {
    if (readable(s.world, t, realNow) && viewMatches(v, t, s.world.ticketReplicaState(t, realNow))) count++;
  }
  s.viewCounts.set(v.id, { at: realNow, count });
  return count;
}

export function viewRoutes(s: CompanionState): Route[] {
  return [
    {
      method: 'GET',
      path: '/views',
      routeClass: 'list',
      scope: 'tickets:read',
      handler: (ctx) => {
        const key = mustKey(ctx);
        const q = parseQuery(ctx, ViewListQuery);
        const limit = q.limit ?? VIEW_PAGE_LIMIT.default;
        const b = binding('views', key, { limit });
        const after = decodeKeyset(s, b, q.cursor);
        const visible = s.world.views
          .filter((v) => viewVisible(v, key))
          .sort((a, c) => cmpKey(a.createdAt, a.id, c.createdAt, c.id))
          .filter((v) => !after || cmpKey(v.createdAt, v.id, after.at, after.id) > 0);
        const page = visible.slice(0, limit);
        const last = page[page.length - 1];
        return pageReply(
          s,
          b,
          page.map((v) =>
            varyView(s.variant, {
              id: v.id,
              name: v.name,
              count: viewCount(s, v),
              filters: v.filters,
              shared: v.shared,
            }),
          ),
          visible.length > limit,
          last ? [last.createdAt, last.id] : null,
        );
      },
    },
  ];
}
