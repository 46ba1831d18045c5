import { ReportQueryBody } from '../../schemas/api/reports.js';
import { keyedRoute, noQuery, parseBody, type Route } from '../http/context.js';
import { forbidden, validation } from '../http/errors.js';
import { catalogEntries } from '../reports/catalog.js';
import { ReportForbiddenError, ReportInputError, runReport } from '../reports/engine.js';
import { QueryError } from '../reports/parser.js';
import type { CompanionState } from '../state.js';
import { varyMetric } from '../variant.js';
import type { AgentRecord, ApiKeyRecord } from '../world/index.js';

/**
 * `GET /reports/metrics` (List class) and `POST /reports/query` (Analytics class), spec 4.11–4.12, 8. The
 * scope is checked by the app; here: a key linked to an existing agent (spec 5.8), then the engine in
 * companion/reports/ enforces that agent's dashboard permissions and restrictions.
 */
export function reportRoutes(s: CompanionState): Route[] {
  const linkedAgent = (key: ApiKeyRecord): AgentRecord => {
    const agent = key.agentId ? s.world.agent(key.agentId) : undefined;
    if (!agent || agent.deletedAt !== null)
      throw forbidden('reports require a key linked to a support agent');
    return agent;
  };
  return [
    keyedRoute('GET', '/reports/metrics', 'list', 'analytics:read', (ctx, key) => {
      linkedAgent(key);
      noQuery(ctx);
      const entries = catalogEntries();
      const data = s.variant === 0 ? entries : entries.map((e) => varyMetric(s.variant, e));
      return { status: 200, body: { success: true, data } };
    }),
    keyedRoute('POST', '/reports/query', 'analytics', 'analytics:read', (ctx, key) => {
      const agent = linkedAgent(key);
      const body = parseBody(ctx, ReportQueryBody);
      try {
        const data = runReport(body, {
          world: s.world,
          orgId: key.orgId,
          agent,
          now: s.now(),
          realNow: s.world.settings.realNow(),
        });
        return { status: 200, body: { success: true, data } };
      } catch (e) {
        if (e instanceof QueryError || e instanceof ReportInputError) throw validation(e.message);
        if (e instanceof ReportForbiddenError) throw forbidden(e.message);
        throw e;
      }
    }),
  ];
}
