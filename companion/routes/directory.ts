import { CreateTagBody, DIRECTORY_PAGE_LIMIT, DirectoryListQuery } from '../../schemas/api/index.js';
import { keyedRoute, parseBody, parseQuery, type RequestContext, type Route } from '../http/context.js';
import { iso } from '../http/instants.js';
import { byCreated, createdKey, keysetPage } from '../rules/paging.js';
import type { CompanionState } from '../state.js';
import { varyAgent, varyTag, varyTeam } from '../variant.js';
import type { AgentRecord, ApiKeyRecord, TagRecord, TeamRecord } from '../world/index.js';

/** The directory lists (spec 4.8): the org's records in creation order, one keyset page at a time. */
function pageOf<T extends { id: string; createdAt: number }>(
  s: CompanionState,
  ctx: RequestContext,
  key: ApiKeyRecord,
  route: string,
  records: T[],
  present: (r: T) => unknown,
) {
  const q = parseQuery(ctx, DirectoryListQuery);
  const page = keysetPage(s, route, key, {}, q.limit ?? DIRECTORY_PAGE_LIMIT.default, q.cursor);
  const all = records.filter((r) => page.follows(r.createdAt, r.id)).sort(byCreated);
  return page.reply(all, present, createdKey);
}

export function directoryRoutes(s: CompanionState): Route[] {
  // A tag reads the same listed and created (`POST /tags` answers with the tag it found or made).
  const presentTag = (t: TagRecord) =>
    varyTag(s.variant, { id: t.id, name: t.name, created_at: iso(t.createdAt) });
  const presentTeam = (t: TeamRecord) =>
    varyTeam(s.variant, {
      id: t.id,
      name: t.name,
      agent_ids: s.world.agents
        .filter((a) => a.deletedAt === null && a.teamIds.includes(t.id))
        .map((a) => a.id),
      created_at: iso(t.createdAt),
    });
  const presentAgent = (a: AgentRecord) =>
    varyAgent(s.variant, {
      id: a.id,
      name: a.name,
      email: a.email,
      kind: a.kind,
      active: a.active,
      team_ids: a.teamIds,
      created_at: iso(a.createdAt),
    });
  return [
    keyedRoute('GET', '/tags', 'directory', 'tags:read', (ctx, key) => {
      const tags = s.world.tags.filter((t) => t.orgId === key.orgId);
      return pageOf(s, ctx, key, 'tags', tags, presentTag);
    }),
    keyedRoute('POST', '/tags', 'directory', 'tags:write', (ctx, key) => {
      const body = parseBody(ctx, CreateTagBody);
      const existing = s.world.tagByName(key.orgId, body.name);
      const tag = existing ?? s.world.createTag(key.orgId, body.name);
      return { status: existing ? 200 : 201, body: { success: true, data: presentTag(tag) } };
    }),
    keyedRoute('GET', '/teams', 'directory', 'teams:read', (ctx, key) => {
      const teams = s.world.teams.filter((t) => t.orgId === key.orgId);
      return pageOf(s, ctx, key, 'teams', teams, presentTeam);
    }),
    keyedRoute('GET', '/agents', 'directory', 'agents:read', (ctx, key) => {
      // Deleted agents are not listed (companion/README.md).
      const agents = s.world.agents.filter((a) => a.orgId === key.orgId && a.deletedAt === null);
      return pageOf(s, ctx, key, 'agents', agents, presentAgent);
    }),
  ];
}
