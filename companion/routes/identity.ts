import type { KeyIdentity } from '../../schemas/api/identity.js';
import { keyedRoute, noQuery, type Route } from '../http/context.js';
import type { CompanionState } from '../state.js';

/**
 * `GET /me` (detail class, any valid key): the calling key's scopes and linked agent, with the agent's
 * dashboard permissions and report restrictions. Not in the spec — our choice (companion/README.md), so
 * that a client can learn what spec 4.12–4.14 make its reads depend on.
 */
export function identityRoutes(s: CompanionState): Route[] {
  return [
    keyedRoute('GET', '/me', 'detail', 'any', (ctx, key) => {
      noQuery(ctx);
      const agent = key.agentId ? s.world.agent(key.agentId) : undefined;
      const data: KeyIdentity = {
        organization_id: key.orgId,
        scopes: key.scopes === null ? null : [...key.scopes],
        agent:
          agent && agent.deletedAt === null
            ? {
                id: agent.id,
                name: agent.name,
                dashboard_permissions: [...agent.permissions],
                restrictions: {
                  channels: agent.restrictions.channels && [...agent.restrictions.channels],
                  team_ids: agent.restrictions.teamIds && [...agent.restrictions.teamIds],
                  agent_ids: agent.restrictions.agentIds && [...agent.restrictions.agentIds],
                },
              }
            : null,
      };
      return { status: 200, body: { success: true, data } };
    }),
  ];
}
