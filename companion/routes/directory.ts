import { CreateTagBody, DIRECTORY_PAGE_LIMIT, DirectoryListQuery } from '../../schemas/api/index.js';
import { mustKey, parseBody, parseQuery, type RequestContext, type Route } from '../http/context.js';
import { iso } from '../http/instants.js';
import { binding, cmpKey, decodeKeyset, pageReply } from '../rules/paging.js';
import type { CompanionState } from '../state.js';
import { varyAgent, varyTag, varyTeam } from '../variant.js';
import type { Scope } from '../world/index.js';

function pageOf<T extends { id: string; createdAt: number }>(
  s: CompanionState,
  ctx: RequestContext,
  route: string,
  records: T[],
  present: (r: T) => unknown,
) {
  const key = mustKey(ctx);
  const q = parseQuery(ctx, DirectoryListQuery);
  const limit = q.limit ?? DIRECTORY_PAGE_LIMIT.default;
  const b = binding(route, key, { limit });
  const after = decodeKeyset(s, b, q.cursor);
  const all = records
    .filter((r) => !after || cmpKey(r.createdAt, r.id, after.at, after.id) > 0)
    .sort((a, c) => cmpKey(a.createdAt, a.id, c.createdAt, c.id));
  const page = all.slice(0, limit);
  const last = page[page.length - 1];
  return pageReply(s, b, page.map(present), all.length > limit, last ? [last.createdAt, last.id] : null);
}

export function directoryRoutes(s: CompanionState): Route[] {
  const r = (method: string, path: string, scope: Scope, handler: Route['handler']): Route => ({
    method,
    path,
    routeClass: 'directory',
    scope,
    handler,
  });
  return [
    r('GET', '/tags', 'tags:read', (ctx) =>
      pageOf(
        s,
        ctx,
        'tags',
        s.world.tags.filter((t) => t.orgId === mustKey(ctx).orgId),
        (t) => varyTag(s.variant, { id: t.id, name: t.name, created_at: iso(t.createdAt) }),
      ),
    ),
    r('POST', '/tags', 'tags:write', (ctx) => {
      const key = mustKey(ctx);
      const body = parseBody(ctx, CreateTagBody);
      const existing = s.world.tagByName(key.orgId, body.name);
      const tag = existing ?? s.world.createTag(key.orgId, body.name);
      return {
        status: existing ? 200 : 201,
        body: {
          success: true,
          data: varyTag(s.variant, { id: tag.id, name: tag.name, created_at: iso(tag.createdAt) }),
        },
      };
    }),
    r('GET', '/teams', 'teams:read', (ctx) =>
      pageOf(
        s,
        ctx,
        'teams',
        s.world.teams.filter((t) => t.orgId === mustKey(ctx).orgId),
        (t) =>
          varyTeam(s.variant, {
            id: t.id,
            name: t.name,
            agent_ids: s.world.agents
              .filter((a) => a.deletedAt === null && a.teamIds.includes(t.id))
              .map((a) => a.id),
            created_at: iso(t.createdAt),
          }),
      ),
    ),
    r('GET', '/agents', 'agents:read', (ctx) =>
      pageOf(
        s,
        ctx,
        'agents',
        s.world.agents.filter((a) => a.orgId === mustKey(ctx).orgId && a.deletedAt === null),
        (a) =>
          varyAgent(s.variant, {
            id: a.id,
            name: a.name,
            email: a.email,
            kind: a.kind,
            active: a.active,
            team_ids: a.teamIds,
            created_at: iso(a.createdAt),
          }),
      ),
    ),
  ];
}
