import type { Channel, Priority, TicketStatus } from '../../schemas/api/index.js';
import { IdSource } from './ids.js';
import { Prng } from './prng.js';
import { subjectFor } from './text.js';
import {
  type AgentRecord,
  type ApiKeyRecord,
  AUTOMATION_ACTION_TYPES,
  type ContactRecord,
  DASHBOARD_PERMISSIONS,
  type MessageRecord,
  type MessageVisibility,
  type Millis,
  type Org,
  SCOPES,
  type SessionRecord,
  type SurveyRecord,
  type TagRecord,
  type TeamRecord,
  type TicketFieldDefinition,
  type TicketFieldRawValue,
  type TicketRecord,
  type ViewRecord,
} from './types.js';
import type { WorldData } from './world.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** How far back the generated history reaches (spec: surveys and sessions across the last 180 days). */
export const HISTORY_DAYS = 180;

const FIRST_NAMES = [
  'Ada',
  'Lee',
  'Maria',
  'Jonas',
  'Priya',
  'Tom',
  'Sofia',
  'Ken',
  'Lena',
  'Omar',
  'Ines',
  'Raj',
];
const LAST_NAMES = ['Admin', 'Limited', 'Garcia', 'Berg', 'Shah', 'Novak', 'Rossi', 'Ito', 'Meyer', 'Haddad'];
const TAG_NAMES = [
  'refund',
  'shipping',
  'billing',
  'bug',
  'vip',
  'feature-request',
  'complaint',
  'returns',
  'account',
  'invoice',
  'urgent-follow-up',
  'feedback',
];
const CHANNEL_WEIGHTS: Array<[Channel, number]> = [
  ['email', 40],
  ['widget', 25],
  ['whatsapp', 15],
  ['voice', 5],
  ['instagram', 5],
  ['facebook', 4],
  ['contact_form', 6],
  ['tiktok', 3],
  ['youtube', 2],
];
const PRIORITIES: Priority[] = ['none', 'urgent', 'high', 'medium', 'low'];
const PRIORITY_WEIGHTS = [10, 5, 15, 55, 15];
const LANGUAGES = ['en', 'de', 'fr', 'es', 'it', 'nl', 'pt', 'sv'];

/** Everything generation needs to build one organization. */
interface OrgSpec {
  name: string;
  domain: string;
  channels: Array<{ type: Channel; identifier: string }>;
  teamNames: string[];
  humanCount: number;
  tickets: number;
  firstTicketNumber: number;
}

interface Ctx {
  agentById: Map<string, AgentRecord>;
  rng: Prng;
  ids: IdSource;
  now: Millis;
  data: WorldData;
}

/**
 * Generates the seeded world relative to `now`: org A (the main workspace, `ticketCount` tickets) and org B
 * (a small separate workspace for isolation tests). Deterministic for (seed, ticketCount, now, idSpace).
 * `idSpace`: record ids come from that space instead of the seed (world/ids.ts), so worlds of one space share
 * them; without it the world is the one the seed always gave.
 */
export function generateWorld(seed: number, ticketCount: number, now: Millis, idSpace?: number): WorldData {
  const rng = new Prng(seed);
  const data: WorldData = {
    seed,
    generatedAt: now,
    orgs: [],
    agents: [],
    teams: [],
    tags: [],
    contacts: [],
    ticketFields: [],
    tickets: [],
    messages: [],
    events: [],
    surveys: [],
    sessions: [],
    automationRuns: [],
    orders: [],
    views: [],
    keys: [],
  };
  const ctx: Ctx = { rng, ids: IdSource.of(rng, idSpace), now, data, agentById: new Map() };
  const a = buildOrg(ctx, {
    name: 'Acme Shop',
    domain: 'acme.example',
    channels: [
      { type: 'email', identifier: 'support@acme.example' },
      { type: 'email', identifier: 'billing@acme.example' },
      { type: 'widget', identifier: 'acme-web' },
      { type: 'whatsapp', identifier: '+4930123456' },
      { type: 'voice', identifier: '+4930123000' },
      { type: 'instagram', identifier: '@acmeshop' },
      { type: 'facebook', identifier: 'acmeshop' },
      { type: 'contact_form', identifier: 'acme-contact' },
    ],
    teamNames: ['Support', 'Billing', 'Technical', 'VIP'],
    humanCount: 12,
    tickets: ticketCount,
    firstTicketNumber: 1,
  });
  const b = buildOrg(ctx, {
    name: 'Other Org GmbH',
    domain: 'other.example',
    channels: [
      { type: 'email', identifier: 'help@other.example' },
      { type: 'tiktok', identifier: '@otherorg' },
    ],
    teamNames: ['Helpdesk'],
    humanCount: 3,
    tickets: 40,
    firstTicketNumber: 900_001,
  });
  buildViewsAndKeys(ctx, a, b);
  guaranteeCreditRules(ctx, a, seed);
  // The world keeps surveys in (sentAt, id) order; exports binary-search it.
  data.surveys.sort((x, y) => x.sentAt - y.sentAt || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  return data;
}

type AgentFields = Pick<AgentRecord, 'name' | 'email' | 'kind' | 'createdAt'> &
  Partial<Omit<AgentRecord, 'id' | 'orgId'>>;

interface BuiltOrg {
  org: Org;
  humans: AgentRecord[];
  ai: AgentRecord[];
  deleted: AgentRecord | null;
  teams: TeamRecord[];
}

function buildOrg(ctx: Ctx, spec: OrgSpec): BuiltOrg {
  const { rng, ids, now, data } = ctx;
  const org: Org = {
    id: `org_${rng.hex(8)}`,
    name: spec.name,
    channels: spec.channels,
    languages: LANGUAGES,
    hourlyRateEur: 32,
    eurPerAiCredit: 0.9,
    firstTicketNumber: spec.firstTicketNumber,
  };
  data.orgs.push(org);
  const since = now - HISTORY_DAYS * DAY;
  const teams: TeamRecord[] = spec.teamNames.map((name) => ({
    id: ids.prefixed('team', 'team', 6),
    orgId: org.id,
    name,
    createdAt: since - 30 * DAY,
  }));
  data.teams.push(...teams);
  /**
   * Every agent starts as an active one, in no team, without dashboard permissions or data restrictions and
   * counted in analytics. The caller draws the id first, before any draw its fields make (the seeded world
   * depends on the order of draws).
   */
  const agent = (id: string, f: AgentFields): AgentRecord => ({
    id,
    orgId: org.id,
    name: f.name,
    email: f.email,
    kind: f.kind,
    active: f.active ?? true,
    deletedAt: f.deletedAt ?? null,
    teamIds: f.teamIds ?? [],
    permissions: f.permissions ?? [],
    restrictions: f.restrictions ?? { channels: null, teamIds: null, agentIds: null },
    excludedFromAnalytics: f.excludedFromAnalytics ?? false,
    createdAt: f.createdAt,
  });
  const humans: AgentRecord[] = [];
  for (let i = 0; i < spec.humanCount; i++) {
    const first = FIRST_NAMES[i % FIRST_NAMES.length] ?? 'Agent';
    const last = LAST_NAMES[i % LAST_NAMES.length] ?? String(i);
    const isAdmin = i === 0;
    const isLimited = i === 1 && spec.humanCount > 3;
    const team = teams[i % teams.length] as TeamRecord;
    humans.push(
      agent(ids.prefixed('agent', 'agt', 8), {
        name: `${first} ${last}`,
        email: `${first.toLowerCase()}.${last.toLowerCase()}@${spec.domain}`,
        kind: 'human',
        teamIds: isAdmin ? teams.map((t) => t.id) : [team.id],
        permissions: isAdmin
          ? [...DASHBOARD_PERMISSIONS]
          : isLimited
            ? ['dashboard.org_metrics', 'dashboard.team_metrics']
            : DASHBOARD_PERMISSIONS.filter(() => rng.chance(0.5)),
        restrictions: {
          channels: isLimited ? ['email', 'widget', 'whatsapp'] : null,
          teamIds: isLimited ? [team.id] : null,
          agentIds: null,
        },
        createdAt: since - 60 * DAY,
      }),
    );
  }
  const deleted: AgentRecord | null =
    spec.humanCount > 3
      ? agent(ids.prefixed('agent', 'agt', 8), {
          name: 'Former Agent',
          email: `former.agent@${spec.domain}`,
          kind: 'human',
          active: false,
          deletedAt: now - 40 * DAY,
          teamIds: [(teams[0] as TeamRecord).id],
          createdAt: since - 90 * DAY,
        })
      : null;
  const ai: AgentRecord[] = [
    agent(ids.prefixed('agent', 'agt', 8), {
      name: 'AI Assistant',
      email: null,
      kind: 'ai',
      createdAt: since - 60 * DAY,
    }),
    // An AI agent excluded from analytics: it never gets a default CSAT credit (spec 2.7 rule 4).
    agent(ids.prefixed('agent', 'agt', 8), {
      name: 'Legacy Bot',
      email: null,
      kind: 'ai',
      excludedFromAnalytics: true,
      createdAt: since - 400 * DAY,
    }),
  ];
  data.agents.push(...humans, ...(deleted ? [deleted] : []), ...ai);
  for (const ag of data.agents) ctx.agentById.set(ag.id, ag);
  const tags: TagRecord[] = TAG_NAMES.map((name) => ({
    id: ids.prefixed('tag', 'tag', 6),
    orgId: org.id,
    name,
    createdAt: since - 10 * DAY,
  }));
  data.tags.push(...tags);
  const fields: TicketFieldDefinition[] = [
    { id: ids.prefixed('field', 'fld', 5), orgId: org.id, name: 'Order number', type: 'text', options: [] },
    {
      id: ids.prefixed('field', 'fld', 5),
      orgId: org.id,
      name: 'Product',
      type: 'dropdown',
      options: ['Shoes', 'Bags', 'Hats'],
    },
    {
      id: ids.prefixed('field', 'fld', 5),
      orgId: org.id,
      name: 'Refund amount',
      type: 'number',
      options: [],
    },
    { id: ids.prefixed('field', 'fld', 5), orgId: org.id, name: 'Warranty', type: 'boolean', options: [] },
  ];
  data.ticketFields.push(...fields);
  const contacts: ContactRecord[] = [];
  const contactCount = Math.max(10, Math.ceil(spec.tickets / 3));
  for (let i = 0; i < contactCount; i++) {
    const first = FIRST_NAMES[(i * 7) % FIRST_NAMES.length] ?? 'C';
    contacts.push({
      id: ids.uuid('contact'),
      orgId: org.id,
      email: i % 9 === 0 ? null : `customer${i}@mail.example`,
      firstName: first,
      lastName: i % 5 === 0 ? null : (LAST_NAMES[i % LAST_NAMES.length] ?? null),
      phone: i % 3 === 0 ? `+49170${String(1_000_000 + i)}` : null,
    });
  }
  data.contacts.push(...contacts);
  const built: BuiltOrg = { org, humans, ai, deleted, teams };
  generateTickets(ctx, built, spec, contacts, tags, fields);
  generateSessions(ctx, built);
  return built;
}

function generateTickets(
  ctx: Ctx,
  built: BuiltOrg,
  spec: OrgSpec,
  contacts: ContactRecord[],
  tags: TagRecord[],
  fields: TicketFieldDefinition[],
) {
  const { rng, ids, now, data } = ctx;
  const { org, humans, ai, deleted, teams } = built;
  const horizon = HISTORY_DAYS * DAY;
  // Creation times first (denser towards now), sorted, so ticket numbers rise with creation time.
  const created = new Float64Array(spec.tickets);
  for (let i = 0; i < spec.tickets; i++) created[i] = now - Math.floor(rng.next() ** 1.4 * horizon) - MINUTE;
  created.sort();
  const channels = CHANNEL_WEIGHTS.filter(([c]) => org.channels.some((x) => x.type === c));
  const chanItems = channels.map(([c]) => c);
  const chanWeights = channels.map(([, w]) => w);
  const aiAssistant = ai[0] as AgentRecord;
  const legacyBot = ai[1] as AgentRecord;
  const firstIdx = data.tickets.length;
  const agentsByTeam = new Map(teams.map((tm) => [tm.id, humans.filter((h) => h.teamIds.includes(tm.id))]));
  for (let i = 0; i < spec.tickets; i++) {
    const createdAt = created[i] as number;
    const channel = rng.weighted(chanItems, chanWeights);
    const idents = org.channels.filter((c) => c.type === channel);
    const team = rng.chance(0.85) ? rng.pick(teams) : null;
    const teamAgents = team ? (agentsByTeam.get(team.id) ?? humans) : humans;
    let assignee = rng.chance(0.8) && teamAgents.length > 0 ? rng.pick(teamAgents) : null;
    if (assignee === null && deleted && createdAt < now - 60 * DAY && rng.chance(0.1)) assignee = deleted;
    const isSide = i > 10 && rng.chance(0.03);
    const tagCount = rng.int(0, 3);
    const tagNames: string[] = [];
    for (let k = 0; k < tagCount; k++) {
      const name = rng.pick(tags).name;
      if (!tagNames.includes(name)) tagNames.push(name);
    }
    const fieldValues: TicketFieldRawValue[] = fields.map((f) => {
      if (rng.chance(0.3)) return null;
      if (f.type === 'text') return `ORD-${rng.int(10000, 99999)}`;
      if (f.type === 'number') return rng.int(0, 300);
      if (f.type === 'boolean') return rng.chance(0.5);
      return rng.pick(f.options);
    });
    const ticket: TicketRecord = {
      idx: data.tickets.length,
      id: ids.uuid('ticket'),
      orgId: org.id,
      number: spec.firstTicketNumber + i,
      subject: rng.chance(0.95) ? subjectFor(rng.u32()) : null,
      status: 'open',
      priority: rng.weighted(PRIORITIES, PRIORITY_WEIGHTS),
      assigneeId: null,
      teamId: team?.id ?? null,
      updatedAt: createdAt,
      resolvedAt: null,
      tags: tagNames,
      channel,
      channelIdentifier: (rng.pick(idents) ?? { identifier: channel }).identifier,
      createdAt,
      contactId: rng.chance(0.97) ? rng.pick(contacts).id : null,
      ticketType: isSide ? 'side' : 'regular',
      parentTicketId: isSide ? (data.tickets[firstIdx + rng.int(0, i - 1)] as TicketRecord).id : null,
      language: rng.chance(0.9) ? rng.pick(LANGUAGES) : null,
      isSpam: rng.chance(0.01),
      resolvedBy: null,
      imported: createdAt < now - 150 * DAY && rng.chance(0.1),
      deletedAt: null,
      fieldValues,
      metadata: rng.chance(0.2) ? { source: 'generator', order_ref: `R${rng.int(1000, 9999)}` } : {},
      messageIdxs: [],
      visibleAt: 0,
      replicaShadow: null,
    };
    data.tickets.push(ticket);
    simulateTicket(ctx, ticket, assignee, humans, teams, aiAssistant, legacyBot, deleted);
  }
}

/** Plays one ticket's life forward from creation until `now`: thread, events, survey, automation, orders. */
function simulateTicket(
  ctx: Ctx,
  t: TicketRecord,
  assignee: AgentRecord | null,
  humans: AgentRecord[],
  teams: TeamRecord[],
  aiAssistant: AgentRecord,
  legacyBot: AgentRecord,
  deleted: AgentRecord | null,
) {
  const { rng, ids, now, data } = ctx;
  const admin = humans[0] as AgentRecord;
  ev(ctx, t, 'created', t.createdAt, null, 'open', null);
  if (assignee) {
    ev(ctx, t, 'assignee_changed', t.createdAt + 1000, null, assignee.id, null);
    t.assigneeId = assignee.id;
  }
  let clock = t.createdAt;
  msg(ctx, t, 'customer', 'public', clock, null);
  if (rng.chance(0.2)) {
    data.automationRuns.push({
      id: ids.uuid('automation_run'),
      orgId: t.orgId,
      ticketIdx: t.idx,
      agentId: null,
      at: clock + 5000,
      actionType: 'auto_tag',
      executed: true,
      timeSavedSeconds: 15,
      aiCredits: 0,
    });
  }
  const ageDays = (now - t.createdAt) / DAY;
  const bot = rng.chance(0.8) ? aiAssistant : legacyBot;
  let lastResponder: AgentRecord | null = null;
  // AI first reply on some tickets.
  if (rng.chance(0.3)) {
    const at = clock + rng.int(20_000, 5 * MINUTE);
    if (at < now) {
      msg(ctx, t, 'ai', 'public', at, bot);
      lastResponder = bot;
      clock = at;
      data.automationRuns.push({
        id: ids.uuid('automation_run'),
        orgId: t.orgId,
        ticketIdx: t.idx,
        agentId: bot.id,
        at,
        actionType: 'ai_reply',
        executed: true,
        timeSavedSeconds: rng.int(120, 600),
        aiCredits: rng.int(1, 3),
      });
    }
  }
  if (rng.chance(0.05)) {
    // An AI run that spent credits without a tracked action (ai_spend counts it).
    data.automationRuns.push({
      id: ids.uuid('automation_run'),
      orgId: t.orgId,
      ticketIdx: t.idx,
      agentId: bot.id,
      at: clock + 2000,
      actionType: rng.pick(AUTOMATION_ACTION_TYPES),
      executed: false,
      timeSavedSeconds: 0,
      aiCredits: 1,
    });
  }
  if (rng.chance(0.1)) {
    const at = clock + rng.int(MINUTE, 2 * HOUR);
    if (at < now) {
      const team = rng.pick(teams);
      if (team.id !== t.teamId) {
        ev(ctx, t, 'team_changed', at, t.teamId, team.id, admin.id);
        t.teamId = team.id;
      }
      const next = rng.pick(humans);
      if (next.id !== t.assigneeId) {
        ev(ctx, t, 'assignee_changed', at, t.assigneeId, next.id, admin.id);
        t.assigneeId = next.id;
        assignee = next;
      }
      if (at > t.updatedAt) t.updatedAt = at;
    }
  }
  if (rng.chance(0.05)) {
    const at = clock + rng.int(MINUTE, HOUR);
    if (at < now) {
      const to = rng.pick(PRIORITIES);
      if (to !== t.priority) ev(ctx, t, 'priority_changed', at, t.priority, to, admin.id);
      t.priority = to;
    }
  }
  const rounds = rng.int(1, 3);
  for (let r = 0; r < rounds; r++) {
    const replyAt = clock + Math.floor(rng.exp(3 * HOUR)) + MINUTE;
    if (replyAt >= now) break;
    if (rng.chance(0.15))
      msg(ctx, t, 'agent', 'internal_note', replyAt - 30_000, assignee ?? rng.pick(humans));
    if (rng.chance(0.05)) msg(ctx, t, 'ai', 'draft', replyAt - 10_000, aiAssistant);
    const who = assignee ?? rng.pick(humans);
    msg(ctx, t, 'agent', 'public', replyAt, who);
    lastResponder = who;
    clock = replyAt;
    if (r < rounds - 1) {
      const back = clock + Math.floor(rng.exp(6 * HOUR)) + MINUTE;
      if (back >= now) break;
      msg(ctx, t, 'customer', 'public', back, null);
      clock = back;
    }
  }
  if (rng.chance(0.1)) msg(ctx, t, 'agent', 'system', clock + 1000, null);
  // Final state: recent tickets are mostly still open; older ones mostly resolved.
  const resolveP = ageDays < 2 ? 0.25 : ageDays < 7 ? 0.7 : 0.93;
  const resolveAt = clock + rng.int(MINUTE, 4 * HOUR);
  if (lastResponder !== null && rng.chance(resolveP) && resolveAt < now) {
    let resolver = lastResponder;
    setStatus(ctx, t, 'resolved', resolveAt, resolver.id);
    t.resolvedAt = resolveAt;
    t.resolvedBy = resolver === legacyBot && rng.chance(0.4) ? 'AI' : resolver.id;
    if (deleted && t.createdAt < now - 60 * DAY && rng.chance(0.05)) t.resolvedBy = deleted.id;
    let resolvedAt = resolveAt;
    // Some get reopened by the customer and resolved again.
    if (rng.chance(0.08)) {
      const back = resolveAt + Math.floor(rng.exp(DAY)) + MINUTE;
      if (back < now) {
        msg(ctx, t, 'customer', 'public', back, null);
        setStatus(ctx, t, 'open', back + 1000, null);
        t.resolvedAt = null;
        const reply = back + Math.floor(rng.exp(2 * HOUR)) + MINUTE;
        if (reply < now) {
          resolver = assignee ?? rng.pick(humans);
          msg(ctx, t, 'agent', 'public', reply, resolver);
          const again = reply + rng.int(MINUTE, HOUR);
          if (again < now) {
            setStatus(ctx, t, 'resolved', again, resolver.id);
            t.resolvedAt = again;
            t.resolvedBy = resolver.id;
            resolvedAt = again;
          }
        }
      }
    }
    if (t.status === 'resolved') {
      maybeSurvey(ctx, t, resolvedAt, deleted);
      if (rng.chance(0.05)) {
        const paidAt = resolvedAt + rng.int(HOUR, 3 * DAY);
        if (paidAt < now) {
          data.orders.push({
            id: ids.uuid('order'),
            orgId: t.orgId,
            ticketIdx: t.idx,
            paidAt,
            amountEur: rng.int(1000, 25000) / 100,
          });
        }
      }
      const closeAt = resolvedAt + 3 * DAY;
      if (closeAt < now && rng.chance(0.5)) setStatus(ctx, t, 'closed', closeAt, null);
    }
  } else if (lastResponder !== null && rng.chance(0.3)) {
    setStatus(ctx, t, 'need_more_info', clock + 1000, lastResponder.id);
  }
}

function ev(
  ctx: Ctx,
  t: TicketRecord,
  type: 'created' | 'status_changed' | 'assignee_changed' | 'team_changed' | 'priority_changed',
  at: Millis,
  from: string | null,
  to: string | null,
  actor: string | null,
) {
  ctx.data.events.push({ ticketIdx: t.idx, type, at, from, to, actorAgentId: actor });
}

function msg(
  ctx: Ctx,
  t: TicketRecord,
  role: MessageRecord['role'],
  visibility: MessageVisibility,
  at: Millis,
  author: AgentRecord | null,
): MessageRecord {
  const { rng, ids, data } = ctx;
  const m: MessageRecord = {
    idx: data.messages.length,
    id: ids.uuid('message'),
    ticketIdx: t.idx,
    role,
    visibility,
    direction: role === 'customer' ? 'inbound' : 'outbound',
    channel: t.channel,
    authorAgentId: author?.id ?? null,
    authorName: author?.name ?? (role === 'customer' ? 'Customer' : 'Support'),
    status: role === 'customer' ? 'delivered' : rng.chance(0.02) ? 'failed' : 'delivered',
    createdAt: at,
    text: null,
    textSeed: rng.u32(),
    attachmentIds: NO_ATTACHMENTS,
    visibleAt: 0,
  };
  data.messages.push(m);
  t.messageIdxs.push(m.idx);
  if (at > t.updatedAt) t.updatedAt = at;
  return m;
}

/** Shared empty list for generated messages (the world copies before appending). */
const NO_ATTACHMENTS: string[] = [];

function setStatus(ctx: Ctx, t: TicketRecord, to: TicketStatus, at: Millis, actor: string | null) {
  ev(ctx, t, 'status_changed', at, t.status, to, actor);
  t.status = to;
  if (at > t.updatedAt) t.updatedAt = at;
}

function maybeSurvey(ctx: Ctx, t: TicketRecord, resolvedAt: Millis, deleted: AgentRecord | null) {
  const { rng, ids, now, data } = ctx;
  if (t.isSpam || !rng.chance(0.5)) return;
  const sentAt = resolvedAt + HOUR + rng.int(0, 10 * MINUTE);
  if (sentAt >= now) return;
  // Credit at creation (spec 2.7 rule 2–4, 6): the resolver when eligible; a few carry explicit credit.
  let credit: string | null = null;
  if (deleted && rng.chance(0.04)) credit = deleted.id;
  else if (t.resolvedBy !== null && t.resolvedBy !== 'AI') {
    const a = ctx.agentById.get(t.resolvedBy);
    if (
      a &&
      a.orgId === t.orgId &&
      !a.excludedFromAnalytics &&
      (a.deletedAt === null || a.deletedAt > sentAt)
    ) {
      credit = a.id;
    }
  }
  let score: number | null = null;
  let comment: string | null = null;
  let submitted: number | null = null;
  if (rng.chance(0.55)) {
    const at = sentAt + Math.floor(rng.exp(DAY));
    if (at < now) {
      submitted = at * 1000 + rng.int(0, 999);
      score = rng.chance(0.03) ? null : rng.weighted([1, 2, 3, 4, 5], [5, 5, 10, 30, 50]);
      if (rng.chance(0.4) || score === null)
        comment = rng.pick(['Great help!', 'Slow answer.', 'Thanks', 'Meh']);
    }
  }
  const survey: SurveyRecord = {
    id: ids.uuid('survey'),
    orgId: t.orgId,
    ticketIdx: t.idx,
    creditedAgentId: credit,
    score,
    comment,
    sentAt: sentAt * 1000 + rng.int(0, 999),
    submittedAt: submitted,
    token: rng.hex(16),
    visibleAt: 0,
    replicaShadow: null,
  };
  data.surveys.push(survey);
}

/**
 * Every world, whatever its seed, exercises the credit rules of spec 2.7 within the last 90 days — the
 * range a short sync reads — not only somewhere in its history: three resolved tickets get a survey each,
 * resolved by the eligible AI agent (rule 6: credited), by the legacy `AI` marker (rule 4: no credit) and by
 * the AI agent excluded from analytics (rule 4: no credit). Their own random stream, so the rest of the
 * world is what the seed always gave.
 */
function guaranteeCreditRules(ctx: Ctx, built: BuiltOrg, seed: number) {
  const { data, now } = ctx;
  const rng = new Prng(seed, 0x27);
  const ids = ctx.ids.over(rng);
  const eligibleAi = built.ai.find((x) => !x.excludedFromAnalytics);
  const excludedAi = built.ai.find((x) => x.excludedFromAnalytics);
  if (!eligibleAi || !excludedAi) return;
  const surveyed = new Set(data.surveys.map((x) => x.ticketIdx));
  const candidates = data.tickets.filter(
    (t) =>
      t.orgId === built.org.id &&
      t.status === 'resolved' &&
      t.resolvedAt !== null &&
      t.resolvedAt > now - 80 * DAY &&
      t.resolvedAt < now - 2 * DAY &&
      t.ticketType === 'regular' &&
      !t.imported &&
      !t.isSpam &&
      t.deletedAt === null &&
      !surveyed.has(t.idx),
  );
  const cases: { resolvedBy: string; actor: string; credit: string | null; answered: boolean }[] = [
    { resolvedBy: eligibleAi.id, actor: eligibleAi.id, credit: eligibleAi.id, answered: true },
    { resolvedBy: 'AI', actor: excludedAi.id, credit: null, answered: true },
    { resolvedBy: excludedAi.id, actor: excludedAi.id, credit: null, answered: false },
  ];
  for (const c of cases) {
    if (candidates.length === 0) return;
    const t = candidates.splice(rng.int(0, candidates.length - 1), 1)[0] as TicketRecord;
    t.resolvedBy = c.resolvedBy;
    const resolved = data.events.filter(
      (e) => e.ticketIdx === t.idx && e.type === 'status_changed' && e.to === 'resolved',
    );
    const last = resolved.at(-1);
    if (last) last.actorAgentId = c.actor;
    const sentAt = (t.resolvedAt as Millis) + HOUR + rng.int(0, 10 * MINUTE);
    const submittedAt = c.answered ? sentAt + rng.int(HOUR, 2 * DAY) : null;
    data.surveys.push({
      id: ids.uuid('survey'),
      orgId: t.orgId,
      ticketIdx: t.idx,
      creditedAgentId: c.credit,
      score: c.answered ? rng.int(3, 5) : null,
      comment: null,
      sentAt: sentAt * 1000 + rng.int(0, 999),
      submittedAt: submittedAt === null || submittedAt >= now ? null : submittedAt * 1000 + rng.int(0, 999),
      token: rng.hex(16),
      visibleAt: 0,
      replicaShadow: null,
    });
  }
}

function generateSessions(ctx: Ctx, built: BuiltOrg) {
  const { rng, now, data } = ctx;
  const out: SessionRecord[] = [];
  const dayStart = Math.floor(now / DAY) * DAY;
  const agents = [...built.humans, ...(built.deleted ? [built.deleted] : [])];
  for (const agent of agents) {
    for (let d = HISTORY_DAYS; d >= 0; d--) {
      if (!rng.chance(0.7)) continue;
      const start = dayStart - d * DAY + 7 * HOUR + rng.int(0, 3 * HOUR);
      if (start >= now) continue;
      if (agent.deletedAt !== null && start >= agent.deletedAt) continue;
      const len = rng.int(4 * HOUR, 9 * HOUR);
      out.push(session(ctx, agent, start, start + len));
      if (rng.chance(0.1))
        out.push(session(ctx, agent, start + HOUR, start + HOUR + rng.int(HOUR, 3 * HOUR)));
    }
  }
  // A stale open record: never closed, 20 days old (spec 2.8 rule 3).
  const stale = built.humans[2] ?? built.humans[0];
  if (stale) {
    const s = session(ctx, stale, dayStart - 20 * DAY + 9 * HOUR, null);
    s.lastActivity = s.start + 2 * HOUR;
    s.updatedAt = s.lastActivity;
    out.push(s);
  }
  // And a certainly open one for the admin, started an hour ago.
  const admin = built.humans[0];
  if (admin) out.push(session(ctx, admin, now - HOUR, null));
  out.sort((x, y) => x.start - y.start || (x.id < y.id ? -1 : 1));
  data.sessions.push(...out);
  data.sessions.sort((x, y) => x.start - y.start || (x.id < y.id ? -1 : 1));
}

function session(ctx: Ctx, agent: AgentRecord, start: Millis, end: Millis | null): SessionRecord {
  const { rng, ids, now } = ctx;
  const open = end === null || end > now;
  const last = open
    ? Math.min(now, start + rng.int(MINUTE, 6 * HOUR))
    : (end as number) - rng.int(0, 20 * MINUTE);
  return {
    id: ids.uuid('session'),
    orgId: agent.orgId,
    agentId: agent.id,
    start,
    end: open ? null : end,
    lastActivity: Math.max(start, last),
    updatedAt: open ? Math.max(start, last) : (end as number),
    ip: `198.51.100.${rng.int(1, 254)}`,
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64)',
    visibleAt: 0,
    replicaShadow: null,
  };
}

function buildViewsAndKeys(ctx: Ctx, a: BuiltOrg, b: BuiltOrg) {
  const { rng, ids, now, data } = ctx;
  const created = now - 100 * DAY;
  const admin = a.humans[0] as AgentRecord;
  const limited = a.humans[1] as AgentRecord;
  const billing = a.teams.find((t) => t.name === 'Billing') as TeamRecord;
  const billingAgents = a.humans.filter((h) => h.teamIds.includes(billing.id) && h.id !== limited.id);
  const views: ViewRecord[] = [
    {
      id: ids.uuid('view'),
      orgId: a.org.id,
      name: 'Open tickets',
      filters: [{ condition: 'status', operator: 'is_one_of', options: ['open', 'need_more_info'] }],
      shared: true,
      visibleToAgentIds: null,
      createdAt: created,
    },
    {
      id: ids.uuid('view'),
      orgId: a.org.id,
      name: 'Urgent',
      filters: [{ condition: 'priority', operator: 'is', options: ['urgent'] }],
      shared: true,
      visibleToAgentIds: null,
      createdAt: created + 1,
    },
    {
      id: ids.uuid('view'),
      orgId: a.org.id,
      name: 'WhatsApp',
      filters: [{ condition: 'channel', operator: 'is', options: ['whatsapp'] }],
      shared: true,
      visibleToAgentIds: null,
      createdAt: created + 2,
    },
    {
      id: ids.uuid('view'),
      orgId: a.org.id,
      name: 'Billing escalations',
      filters: [
        { condition: 'team', operator: 'is', options: [billing.id] },
        { condition: 'status', operator: 'is_not', options: ['closed'] },
      ],
      shared: false,
      visibleToAgentIds: [admin.id, ...billingAgents.map((x) => x.id)],
      createdAt: created + 3,
    },
    {
      id: ids.uuid('view'),
      orgId: a.org.id,
      name: 'Refunds',
      filters: [{ condition: 'tag', operator: 'is', options: ['refund'] }],
      shared: true,
      visibleToAgentIds: null,
      createdAt: created + 4,
    },
    {
      id: ids.uuid('view'),
      orgId: b.org.id,
      name: 'All open',
      filters: [{ condition: 'status', operator: 'is', options: ['open'] }],
      shared: true,
      visibleToAgentIds: null,
      createdAt: created,
    },
  ];
  data.views.push(...views);
  const key = (label: ApiKeyRecord['label']) => `sk_${label}_${rng.hex(16)}`;
  const keys: ApiKeyRecord[] = [
    { label: 'admin', key: key('admin'), orgId: a.org.id, scopes: [...SCOPES], agentId: admin.id },
    { label: 'readonly', key: key('readonly'), orgId: a.org.id, scopes: ['tickets:read'], agentId: null },
    {
      label: 'agent_limited',
      key: key('agent_limited'),
      orgId: a.org.id,
      scopes: ['tickets:read', 'analytics:read'],
      agentId: limited.id,
    },
    { label: 'legacy', key: key('legacy'), orgId: a.org.id, scopes: null, agentId: null },
    {
      label: 'other_org',
      key: key('other_org'),
      orgId: b.org.id,
      scopes: [...SCOPES],
      agentId: (b.humans[0] as AgentRecord).id,
    },
  ];
  data.keys.push(...keys);
}
