import { VIEW_PAGE_LIMIT, ViewListQuery } from '../../schemas/api/index.js';
import { keyedRoute, parseQuery, type Route } from '../http/context.js';
import { byCreated, createdKey, keysetPage } from '../rules/paging.js';
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
  const list = keyedRoute('GET', '/views', 'list', 'tickets:read', (ctx, key) => {
    const q = parseQuery(ctx, ViewListQuery);
    const page = keysetPage(s, 'views', key, {}, q.limit ?? VIEW_PAGE_LIMIT.default, q.cursor);
    const visible = s.world.views
      .filter((v) => viewVisible(v, key))
      .sort(byCreated)
      .filter((v) => page.follows(v.createdAt, v.id));
    const present = (v: ViewRecord) =>
      varyView(s.variant, {
        id: v.id,
        name: v.name,
        count: viewCount(s, v),
        filters: v.filters,
        shared: v.shared,
      });
    return page.reply(visible, present, createdKey);
  });
  return [list];
}
