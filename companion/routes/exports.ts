import { AgentSessionQuery, CsatQuery, EXPORT_PAGE_LIMIT } from '../../schemas/api/index.js';
import { hasScope, keyedRoute, parseQuery, type Route } from '../http/context.js';
import { forbidden, validation } from '../http/errors.js';
import { presentSession, presentSurvey, sessionState, surveyState } from '../present.js';
import { cmpKey, keysetPage } from '../rules/paging.js';
import { inWindow, overlaps, parseWindow } from '../rules/windows.js';
import type { CompanionState } from '../state.js';
import type { ApiKeyRecord, DashboardPermission, SessionRecord, SurveyRecord } from '../world/index.js';

/** Spec 4.13/4.14, 5.8: a linked agent with the named dashboard permissions; else 403 FORBIDDEN_SCOPE. */
function requireDashboard(s: CompanionState, key: ApiKeyRecord, perms: DashboardPermission[]): void {
  const agent = key.agentId ? s.world.agent(key.agentId) : undefined;
  if (!agent || agent.deletedAt !== null)
    throw forbidden('this endpoint requires a key linked to a support agent');
  const missing = perms.filter((p) => !agent.permissions.includes(p));
  if (missing.length > 0) throw forbidden(`the linked agent lacks ${missing.join(', ')}`);
}

const CSAT_META_ATTRIBUTION =
  'credited_agent_id is the survey agent id stored at creation; never inferred from resolver or assignee at read time';
const CSAT_PRIVACY = 'no customer contact details, survey tokens or links, or ticket bodies are returned';

export function exportRoutes(s: CompanionState): Route[] {
  const csat = keyedRoute('GET', '/csat-surveys', 'analytics', 'analytics:read', (ctx, key) => {
    requireDashboard(s, key, ['dashboard.org_metrics', 'dashboard.ticket_csat']);
    const q = parseQuery(ctx, CsatQuery);
    const withComments = q.include_comments === 'true';
    if (withComments && !hasScope(key, 'tickets:read'))
      throw forbidden('include_comments=true also requires tickets:read');
    const sub = q.submitted_from !== undefined || q.submitted_before !== undefined;
    const sent = q.sent_from !== undefined || q.sent_before !== undefined;
    if (sub && sent) throw validation('use either the submitted_* pair or the sent_* pair, not both');
    if (!sub && !sent)
      throw validation(
        'one complete pair is required: submitted_from/submitted_before or sent_from/sent_before',
      );
    const [from, before, names] = sub
      ? [q.submitted_from, q.submitted_before, ['submitted_from', 'submitted_before'] as [string, string]]
      : [q.sent_from, q.sent_before, ['sent_from', 'sent_before'] as [string, string]];
    if (from === undefined || before === undefined)
      throw validation(`${names[0]} and ${names[1]} must be given together`);
    const w = parseWindow(from, before, names);
    const limit = q.limit ?? EXPORT_PAGE_LIMIT.default;
    const { cursor, ...filters } = q;
    const bound = { ...filters, include_comments: String(withComments) };
    const page = keysetPage(s, 'csat-surveys', key, bound, limit, cursor);
    const realNow = s.world.settings.realNow();
    const dateOf = (r: SurveyRecord): number | null => (sub ? surveyState(s, r).submittedAt : r.sentAt);
    const matches: SurveyRecord[] = [];
    // `surveys` is kept in (sentAt, id) order: a sent window starts with a binary search and stops after one
    // more match than the page needs; a submitted window must scan and sort.
    let startIdx = 0;
    if (!sub) {
      const lowUs = page.after ? page.after.at : w.fromUs;
      let hi = s.world.surveys.length;
      while (startIdx < hi) {
        const mid = (startIdx + hi) >> 1;
        if ((s.world.surveys[mid] as SurveyRecord).sentAt < lowUs) startIdx = mid + 1;
        else hi = mid;
      }
    }
    for (let i = startIdx; i < s.world.surveys.length; i++) {
      const r = s.world.surveys[i] as SurveyRecord;
      if (!sub && (r.sentAt >= w.beforeUs || matches.length > limit)) break;
      if (r.orgId !== key.orgId || r.visibleAt > realNow) continue;
      const d = dateOf(r);
      if (d === null || !inWindow(d, w)) continue;
      const t = s.world.tickets[r.ticketIdx];
      // Eligible: existing, non-deleted, non-side, non-imported tickets (spec 2.7 rule 7).
      if (!t || t.deletedAt !== null || t.ticketType === 'side' || t.imported) continue;
      if (q.credited_agent_id !== undefined && r.creditedAgentId !== q.credited_agent_id) continue;
      if (q.score_lte !== undefined) {
        const score = surveyState(s, r).score;
        if (score === null || score > q.score_lte) continue;
      }
      if (!page.follows(d, r.id)) continue;
      matches.push(r);
    }
    if (sub) matches.sort((a, c) => cmpKey(dateOf(a) ?? 0, a.id, dateOf(c) ?? 0, c.id));
    return page.reply(
      matches,
      (r) => presentSurvey(s, r, withComments),
      (r) => [dateOf(r) ?? 0, r.id],
      {
        meta: {
          attribution: CSAT_META_ATTRIBUTION,
          comments_included: withComments,
          privacy: CSAT_PRIVACY,
        },
      },
    );
  });

  const sessions = keyedRoute('GET', '/agent-sessions', 'analytics', 'analytics:read', (ctx, key) => {
    requireDashboard(s, key, ['dashboard.org_metrics', 'dashboard.other_agents_metrics']);
    const q = parseQuery(ctx, AgentSessionQuery);
    const w = parseWindow(q.from, q.before, ['from', 'before']);
    const limit = q.limit ?? EXPORT_PAGE_LIMIT.default;
    const filters = { from: q.from, before: q.before, agent_id: q.agent_id };
    const page = keysetPage(s, 'agent-sessions', key, filters, limit, q.cursor);
    const realNow = s.world.settings.realNow();
    const out: SessionRecord[] = []; // one more than the page tells that there is a next one
    for (const r of s.world.sessions) {
      if (r.start * 1000 >= w.beforeUs) break; // sorted by start
      if (r.orgId !== key.orgId || r.visibleAt > realNow) continue;
      if (q.agent_id !== undefined && r.agentId !== q.agent_id) continue;
      const st = sessionState(s, r);
      if (!overlaps(r.start * 1000, st.end === null ? null : st.end * 1000, w)) continue;
      if (!page.follows(r.start, r.id)) continue;
      out.push(r);
      if (out.length > limit) break;
    }
    return page.reply(
      out,
      (r) => presentSession(s, r),
      (r) => [r.start, r.id],
      {
        meta: {
          date_filter: 'recorded_interval_overlap',
          order_by: 'session_start,id',
          stale_open_records_included: true,
          mutable: true,
          break_history_stored: false,
          description:
            'Recorded agent login sessions overlapping [from, before), unclipped and unmerged. A null session_end is not proof of current availability.',
        },
      },
    );
  });
  return [csat, sessions];
}
