import { SupportApiError } from '../connectors/support-api/index.js';
import type { KeyIdentity } from '../schemas/api/identity.js';
import type { ReportAccess } from '../schemas/reconcile.js';
import type { ActivityDeps } from './deps.js';

/**
 * What the report API answers within for this key (spec 4.12: the linked agent's channel, team and agent
 * restrictions), from `GET /me` (not in the spec: schemas/api/identity.ts): one detail-class request, on
 * the detail task queue. A source without the endpoint is "not known"; a failure that retrying may fix
 * goes back to Temporal (the run treats a final failure as "not known" too).
 */
export function readReportAccess(deps: ActivityDeps) {
  return async (): Promise<ReportAccess> => {
    try {
      return reportAccessOf(await deps.client.identity());
    } catch (err) {
      if (err instanceof SupportApiError && err.status < 500 && err.status !== 429) {
        return { restricted: null, detail: `the source does not say what the key may see (${err.code})` };
      }
      throw err;
    }
  };
}

/**
 * Conservative: the reports count as restricted only when the source names a restriction, and as whole only
 * when it says every restriction is none; anything else (no agent, no restrictions field, a shape we do not
 * read) is not known, so the reconciliation compares as it would without knowing (a mismatch stays a
 * warning) rather than hide a real difference behind a guess.
 */
export function reportAccessOf(identity: KeyIdentity): ReportAccess {
  const agent = identity.agent;
  if (!agent) {
    return {
      restricted: null,
      detail:
        agent === null
          ? 'the key is not linked to an agent (spec 5.8: reports need one)'
          : 'the source does not say which agent the key is linked to',
    };
  }
  const who = `the key's agent ${agent.name ?? agent.id}`;
  const r = agent.restrictions;
  const lists: [string, string[] | null | undefined][] = r
    ? [
        ['channels', r.channels],
        ['teams', r.team_ids],
        ['assignees', r.agent_ids],
      ]
    : [];
  const named = lists.flatMap(([what, list]) => (list ? [`${what} ${list.join(', ') || '(none)'}`] : []));
  if (named.length > 0) return { restricted: true, detail: `${who} sees only ${named.join('; ')}` };
  if (r && r.channels === null && r.team_ids === null && r.agent_ids === null)
    return { restricted: false, detail: `${who} has no channel, team or agent restriction` };
  return { restricted: null, detail: `the source does not say what ${who} may see` };
}
