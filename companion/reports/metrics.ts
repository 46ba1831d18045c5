import type { Channel } from '../../schemas/api/index.js';
import { isReopen, type SurveyRecord, type TicketRecord } from '../world/index.js';
import {
  ACTION_TYPES,
  FIRST_RESPONSE_TARGET_MS,
  type Obs,
  type ObsBuilder,
  type OrgIndex,
  RESOLUTION_TARGET_MS,
} from './observations.js';

/**
 * How each catalog metric is computed (spec 2.11): an observation source plus an aggregation over the rows that
 * fall in a bucket. `distinct` counts distinct tickets, `count` counts rows (events), `sum` adds values, `median`
 * and `mean` take the rows' values, `percent` is the mean of 0/1 rows in percentage points. Every period value is
 * computed from the rows of that period directly (spec 2.10 rule 5), never from daily values.
 */
export type Aggregation = 'distinct' | 'count' | 'sum' | 'median' | 'mean' | 'percent';

export interface SourceContext {
  ix: OrgIndex;
  /** Companion clock (ms). */
  now: number;
  /** Real time (ms) for replica visibility. */
  realNow: number;
}

export type MetricImpl =
  | { kind: 'obs'; agg: Aggregation; source: (c: SourceContext) => Obs }
  | { kind: 'difference'; left: string; right: string }
  | { kind: 'presence' };

const SECONDS = 1000;
const SOCIAL: ReadonlySet<Channel> = new Set(['whatsapp', 'instagram', 'facebook', 'tiktok', 'youtube']);

/** Tickets created (creation cohort); `v` from `value`, skipping tickets where it is null. */
function created(name: string, value: (t: TicketRecord, ix: OrgIndex) => number | null) {
  return (c: SourceContext) =>
    c.ix.cached(name, (b) => {
      for (const t of c.ix.tickets) {
        const v = value(t, c.ix);
        if (v !== null) b.add(t.createdAt, t.idx, v, c.ix.agent(t.assigneeId), -1, t.visibleAt);
      }
    });
}

const channelCohort = (name: string, match: (ch: Channel) => boolean) =>
  created(name, (t) => (match(t.channel) ? 1 : null));

/** Public thread items matching `pick`, dated by their creation (reply events). */
function replies(name: string, pick: (role: string, author: string | null) => boolean) {
  return (c: SourceContext) =>
    c.ix.cached(name, (b) => {
      const w = c.ix.world;
      for (const t of c.ix.tickets) {
        for (const mi of t.messageIdxs) {
          const m = w.messages[mi];
          if (m?.visibility !== 'public' || m.role === 'customer' || !pick(m.role, m.authorAgentId)) continue;
          b.add(m.createdAt, t.idx, 1, c.ix.agent(m.authorAgentId), -1, m.visibleAt);
        }
      }
    });
}

function firstResponse(name: string, human: boolean) {
  return (c: SourceContext) =>
    c.ix.cached(name, (b) => {
      for (const t of c.ix.tickets) {
        const f = c.ix.facts.get(t.idx);
        if (!f) continue;
        const at = human ? f.firstHumanReplyAt : f.firstReplyAt;
        if (Number.isNaN(at)) continue;
        b.add(
          at,
          t.idx,
          (at - f.firstCustomerAt) / SECONDS,
          human ? f.firstHumanAgent : f.firstReplyAgent,
          -1,
          human ? f.firstHumanVis : f.firstReplyVis,
        );
      }
    });
}

/** Every status change to `resolved` (resolution events), `v` from `value`. */
function resolutions(
  name: string,
  value: (e: { at: number; actor: string | null; later: boolean }) => number,
) {
  return (c: SourceContext) =>
    c.ix.cached(name, (b) => {
      for (const [tIdx, events] of c.ix.eventsByTicket) {
        for (let i = 0; i < events.length; i++) {
          const e = events[i];
          if (e?.type !== 'status_changed' || e.to !== 'resolved') continue;
          let later = false;
          for (let j = i + 1; j < events.length && !later; j++)
            later = isReopen(events[j] as (typeof events)[number]);
          b.add(e.at, tIdx, value({ at: e.at, actor: e.actorAgentId, later }), c.ix.agent(e.actorAgentId));
        }
      }
    });
}

/** Tickets whose final (current) resolution falls in the period, `v` from `value`. */
function finalResolution(name: string, value: (t: TicketRecord, ix: OrgIndex) => number | null) {
  return (c: SourceContext) =>
    c.ix.cached(name, (b) => {
      for (const t of c.ix.tickets) {
        if (t.resolvedAt === null || (t.status !== 'resolved' && t.status !== 'closed')) continue;
        const v = value(t, c.ix);
        if (v !== null) b.add(t.resolvedAt, t.idx, v, c.ix.agent(t.resolvedBy), -1, t.visibleAt);
      }
    });
}

function ticketEvents(
  name: string,
  pick: (e: { type: string; from: string | null; to: string | null }) => boolean,
  agentOf: 'to' | 'assignee',
) {
  return (c: SourceContext) =>
    c.ix.cached(name, (b) => {
      for (const [tIdx, events] of c.ix.eventsByTicket) {
        const t = c.ix.world.tickets[tIdx] as TicketRecord;
        for (const e of events) {
          if (!pick(e)) continue;
          b.add(e.at, tIdx, 1, c.ix.agent(agentOf === 'to' ? e.to : t.assigneeId));
        }
      }
    });
}

/** First-response SLA outcome: 1 met, 0 breached, null not yet known (depends on the clock: not cached). */
function slaFirstOutcome(t: TicketRecord, ix: OrgIndex, now: number): number | null {
  const f = ix.facts.get(t.idx);
  if (!f) return null;
  const start = Number.isNaN(f.firstCustomerAt) ? t.createdAt : f.firstCustomerAt;
  const target = FIRST_RESPONSE_TARGET_MS[t.priority] ?? 24 * 3_600_000;
  if (!Number.isNaN(f.firstReplyAt)) return f.firstReplyAt - start <= target ? 1 : 0;
  return now - start > target ? 0 : null;
}

function slaFirst(breachesOnly: boolean) {
  return (c: SourceContext) =>
    c.ix.fresh((b) => {
      for (const t of c.ix.tickets) {
        const o = slaFirstOutcome(t, c.ix, c.now);
        if (o === null || (breachesOnly && o === 1)) continue;
        b.add(t.createdAt, t.idx, breachesOnly ? 1 : o, c.ix.agent(t.assigneeId), -1, t.visibleAt);
      }
    });
}

/** What the replica shows of a survey now (spec: reads come from a replica). */
function surveyNow(s: SurveyRecord, realNow: number) {
  return s.replicaShadow !== null && realNow < s.replicaShadow.until
    ? { score: s.replicaShadow.score, submittedAt: s.replicaShadow.submittedAt }
    : { score: s.score, submittedAt: s.submittedAt };
}

/** Surveys eligible for analytics: as the CSAT export (spec 2.7 rule 7). */
function eligibleSurveys(
  c: SourceContext,
  each: (s: SurveyRecord, st: ReturnType<typeof surveyNow>, b: ObsBuilder) => void,
) {
  return c.ix.fresh((b) => {
    const w = c.ix.world;
    for (const s of w.surveys) {
      if (s.orgId !== c.ix.orgId || s.visibleAt > c.realNow) continue;
      const t = w.tickets[s.ticketIdx];
      if (!t || t.deletedAt !== null || t.ticketType === 'side' || t.imported) continue;
      each(s, surveyNow(s, c.realNow), b);
    }
  });
}

function scoredSubmissions(value: (score: number) => number | null) {
  return (c: SourceContext) =>
    eligibleSurveys(c, (s, st, b) => {
      if (st.submittedAt === null || st.score === null) return;
      const v = value(st.score);
      if (v !== null) b.add(Math.floor(st.submittedAt / 1000), s.ticketIdx, v, c.ix.agent(s.creditedAgentId));
    });
}

function runs(
  name: string,
  value: (
    r: { executed: boolean; timeSavedSeconds: number; aiCredits: number },
    c: SourceContext,
  ) => number | null,
) {
  return (c: SourceContext) =>
    c.ix.cached(name, (b) => {
      for (const r of c.ix.world.automationRuns) {
        if (r.orgId !== c.ix.orgId) continue;
        const v = value(r, c);
        if (v === null) continue;
        b.add(r.at, r.ticketIdx ?? -1, v, c.ix.agent(r.agentId), ACTION_TYPES.indexOf(r.actionType));
      }
    });
}

const org = (c: SourceContext) => c.ix.world.org(c.ix.orgId);

/** Open tickets now (replica state), for the snapshot metrics; `at` is irrelevant for snapshots. */
function snapshot(
  pick: (t: TicketRecord, status: string, assignee: string | null, c: SourceContext) => boolean,
) {
  return (c: SourceContext) =>
    c.ix.fresh((b) => {
      for (const t of c.ix.tickets) {
        const st = c.ix.world.ticketReplicaState(t, c.realNow);
        if (!pick(t, st.status, st.assigneeId, c)) continue;
        b.add(0, t.idx, 1, c.ix.agent(st.assigneeId), -1, t.visibleAt);
      }
    });
}
const isOpen = (status: string) => status === 'open' || status === 'need_more_info';

/** A metric observed by `source` and aggregated by `agg`: `count(source)`, `distinct(source)` and so on. */
const aggregated =
  (agg: Aggregation) =>
  (source: (c: SourceContext) => Obs): MetricImpl => ({ kind: 'obs', agg, source });
const count = aggregated('count');
const distinct = aggregated('distinct');
const sum = aggregated('sum');
const mean = aggregated('mean');
const median = aggregated('median');
const percent = aggregated('percent');

// Sources two metrics read with different aggregations (the cache name makes them one computation anyway).
const publicMessages = created('messages', (t, ix) => ix.facts.get(t.idx)?.publicMessages ?? 0);
const resolutionTime = finalResolution(
  'resolution_time',
  (t) => ((t.resolvedAt ?? 0) - t.createdAt) / SECONDS,
);
const reopens = ticketEvents('reopens', (e) => isReopen(e as never), 'assignee');
const reassignments = ticketEvents(
  'reassignments',
  (e) => e.type === 'assignee_changed' && e.from !== null && e.to !== null,
  'to',
);

export const IMPLS: Record<string, MetricImpl> = {
  new_tickets: count(created('created', () => 1)),
  resolved_tickets: distinct(resolutions('resolutions', () => 1)),
  tickets_replied_to: distinct(replies('replies', () => true)),
  answered_tickets: distinct(replies('attributed_replies', (_r, author) => author !== null)),
  reopened_tickets: distinct(reopens),
  backlog_now: count(snapshot((_t, s) => isOpen(s))),
  backlog_over_24h: count(snapshot((t, s, _a, c) => isOpen(s) && t.createdAt < c.now - 24 * 3_600_000)),
  backlog_over_48h: count(snapshot((t, s, _a, c) => isOpen(s) && t.createdAt < c.now - 48 * 3_600_000)),
  awaiting_response_now: count(snapshot((_t, s) => s === 'need_more_info')),
  net_backlog_change: { kind: 'difference', left: 'new_tickets', right: 'resolved_tickets' },
  messages: sum(publicMessages),
  messages_per_ticket: mean(publicMessages),
  agent_messages: count(replies('human_replies', (role) => role === 'agent')),
  customer_first_response_time: median(firstResponse('first_response', false)),
  human_first_response_time: median(firstResponse('first_human_response', true)),
  full_resolution_time: median(resolutionTime),
  csat_average: mean(scoredSubmissions((score) => score)),
  csat_responses: count(scoredSubmissions(() => 1)),
  low_csat_tickets: distinct(scoredSubmissions((score) => (score <= 2 ? 1 : null))),
  csat_response_rate: percent((c) =>
    eligibleSurveys(c, (s, st, b) =>
      b.add(
        Math.floor(s.sentAt / 1000),
        s.ticketIdx,
        st.submittedAt !== null && st.score !== null ? 1 : 0,
        c.ix.agent(s.creditedAgentId),
      ),
    ),
  ),
  time_saved: sum(runs('time_saved', (r) => (r.executed ? r.timeSavedSeconds : null))),
  money_saved: sum(
    runs('money_saved', (r, c) =>
      r.executed ? (r.timeSavedSeconds / 3600) * (org(c)?.hourlyRateEur ?? 0) : null,
    ),
  ),
  ai_spend: sum(
    runs('ai_spend', (r, c) => (r.aiCredits > 0 ? r.aiCredits * (org(c)?.eurPerAiCredit ?? 0) : null)),
  ),
  agent_online_time: { kind: 'presence' },
  // ---- our own
  email_tickets: count(channelCohort('email_tickets', (ch) => ch === 'email')),
  chat_tickets: count(channelCohort('chat_tickets', (ch) => ch === 'widget')),
  social_messaging_tickets: count(channelCohort('social_tickets', (ch) => SOCIAL.has(ch))),
  voice_tickets: count(channelCohort('voice_tickets', (ch) => ch === 'voice')),
  contact_form_tickets: count(channelCohort('form_tickets', (ch) => ch === 'contact_form')),
  customer_messages: sum(created('customer_messages', (t, ix) => ix.facts.get(t.idx)?.customerMessages ?? 0)),
  average_first_response_time: mean(firstResponse('first_response', false)),
  ai_answered_tickets: distinct(replies('ai_replies', (role) => role === 'ai')),
  sla_first_response_breaches: count(slaFirst(true)),
  sla_first_response_compliance: percent(slaFirst(false)),
  sla_resolution_breaches: count(
    finalResolution('sla_resolution', (t) =>
      (t.resolvedAt ?? 0) - t.createdAt > (RESOLUTION_TARGET_MS[t.priority] ?? 0) ? 1 : null,
    ),
  ),
  first_contact_resolution_rate: percent(
    finalResolution('fcr', (t, ix) => {
      const f = ix.facts.get(t.idx);
      return f && f.publicReplies === 1 && f.reopens === 0 ? 1 : 0;
    }),
  ),
  average_resolution_time: mean(resolutionTime),
  replies_per_resolved_ticket: mean(
    finalResolution('replies_resolved', (t, ix) => ix.facts.get(t.idx)?.publicReplies ?? 0),
  ),
  ai_resolved_tickets: distinct((c) => aiResolutions(c, true)),
  ai_resolution_rate: percent((c) => aiResolutions(c, false)),
  reopen_events: count(reopens),
  reopen_rate: percent(resolutions('reopened_after', (e) => (e.later ? 1 : 0))),
  reassigned_tickets: distinct(reassignments),
  reassignments: count(reassignments),
  team_transfers: distinct(
    ticketEvents(
      'team_transfers',
      (e) => e.type === 'team_changed' && e.from !== null && e.to !== null,
      'assignee',
    ),
  ),
  csat_positive_rate: percent(scoredSubmissions((score) => (score >= 4 ? 1 : 0))),
  automation_actions: count(runs('actions', (r) => (r.executed ? 1 : null))),
  ai_credits_used: sum(runs('ai_credits', (r) => (r.aiCredits > 0 ? r.aiCredits : null))),
  unassigned_now: count(snapshot((_t, s, a) => isOpen(s) && a === null)),
  order_revenue: sum((c) =>
    c.ix.cached('orders', (b) => {
      for (const o of c.ix.world.orders) {
        if (o.orgId !== c.ix.orgId) continue;
        const t = c.ix.world.tickets[o.ticketIdx];
        b.add(o.paidAt, o.ticketIdx, o.amountEur, c.ix.agent(t?.assigneeId ?? null));
      }
    }),
  ),
};

/** Resolution events by AI agents only (`onlyAi`) or all resolution events flagged 1 when the actor is an AI agent. */
function aiResolutions(c: SourceContext, onlyAi: boolean): Obs {
  return c.ix.cached(onlyAi ? 'ai_resolutions' : 'ai_resolution_flags', (b) => {
    for (const [tIdx, events] of c.ix.eventsByTicket) {
      for (const e of events) {
        if (e.type !== 'status_changed' || e.to !== 'resolved') continue;
        const ai = c.ix.isAiAgent(e.actorAgentId);
        if (onlyAi && !ai) continue;
        b.add(e.at, tIdx, ai ? 1 : 0, c.ix.agent(e.actorAgentId));
      }
    }
  });
}
