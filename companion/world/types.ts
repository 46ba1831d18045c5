import type {
  Channel,
  MessageRole,
  Priority,
  TicketFieldType,
  TicketStatus,
  TicketType,
  ViewFilter,
} from '../../schemas/api/index.js';

/**
 * The companion's internal world model. These are storage records, not API shapes: the routes turn them into
 * the zod-defined API resources of schemas/api. Times are epoch milliseconds of the companion clock, except
 * survey times which are epoch microseconds (spec 2.7 exports microseconds).
 */
export type Millis = number;
export type Micros = number;

/** Scopes of spec 5.4. */
export const SCOPES = [
  'tickets:read',
  'tickets:write',
  'tickets:export',
  'analytics:read',
  'tags:read',
  'tags:write',
  'teams:read',
  'agents:read',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Dashboard permissions an agent can hold (spec 4.12–4.14 name the first three). */
export const DASHBOARD_PERMISSIONS = [
  'dashboard.org_metrics',
  'dashboard.ticket_csat',
  'dashboard.other_agents_metrics',
  'dashboard.team_metrics',
  'dashboard.automation_metrics',
] as const;
export type DashboardPermission = (typeof DASHBOARD_PERMISSIONS)[number];

export interface ConnectedChannel {
  type: Channel;
  /** Disambiguates several channels of one type (`channel_identifier`, spec 4.4). */
  identifier: string;
}

export interface Org {
  id: string;
  name: string;
  channels: ConnectedChannel[];
  /** Supported inbox languages (`language` of spec 4.4). */
  languages: string[];
  /** Assumptions for `time_saved` / `money_saved` / `ai_spend` (spec 2.11). */
  hourlyRateEur: number;
  eurPerAiCredit: number;
  /** The first ticket number handed out in this org (org B starts far away so numbers never collide). */
  firstTicketNumber: number;
}

export interface AgentRecord {
  id: string;
  orgId: string;
  name: string;
  /** Null for AI agents. */
  email: string | null;
  kind: 'human' | 'ai';
  active: boolean;
  /** Deleted agents keep their id on stored survey credits but have no name in exports (spec 2.7). */
  deletedAt: Millis | null;
  teamIds: string[];
  permissions: DashboardPermission[];
  /** Data restrictions applied to reports (spec 4.12); null = unrestricted. */
  restrictions: { channels: Channel[] | null; teamIds: string[] | null; agentIds: string[] | null };
  /** AI agents excluded from analytics accounting get no default CSAT credit (spec 2.7 rule 4). */
  excludedFromAnalytics: boolean;
  createdAt: Millis;
}

export interface TeamRecord {
  id: string;
  orgId: string;
  name: string;
  createdAt: Millis;
}

export interface TagRecord {
  id: string;
  orgId: string;
  name: string;
  createdAt: Millis;
}

export interface ContactRecord {
  id: string;
  orgId: string;
  email: string | null;
  firstName: string | null;
  lastName: string | null;
  phone: string | null;
}

export interface TicketFieldDefinition {
  id: string;
  orgId: string;
  name: string;
  type: TicketFieldType;
  options: string[];
}

export type TicketFieldRawValue = string | number | boolean | string[] | null;

/** The ticket fields that reads show; kept as a snapshot while a write is still lagging on the replica. */
export interface TicketState {
  status: TicketStatus;
  priority: Priority;
  assigneeId: string | null;
  teamId: string | null;
  updatedAt: Millis;
  resolvedAt: Millis | null;
  tags: string[];
}

export interface TicketRecord extends TicketState {
  /** Position in `World.tickets` (stable; tickets are never removed, only marked deleted). */
  idx: number;
  id: string;
  orgId: string;
  number: number;
  subject: string | null;
  channel: Channel;
  channelIdentifier: string;
  createdAt: Millis;
  contactId: string | null;
  ticketType: TicketType;
  parentTicketId: string | null;
  language: string | null;
  isSpam: boolean;
  /** The agent id recorded as resolver; `'AI'` is the legacy AI marker (spec 2.7 rule 4). */
  resolvedBy: string | null;
  /** Imported tickets (migrated history) are not eligible for CSAT export (spec 2.7 rule 7). */
  imported: boolean;
  deletedAt: Millis | null;
  /** Values aligned with the org's ticket field definitions (null when unset). */
  fieldValues: TicketFieldRawValue[];
  metadata: Record<string, string | number | boolean | null>;
  /** Indexes into `World.messages`, in creation order. */
  messageIdxs: number[];
  /** Real-time ms from which the replica shows this ticket at all (replica lag). */
  visibleAt: number;
  /** While a later write is lagging, reads show this earlier state until `until` (real-time ms). */
  replicaShadow: { until: number; state: TicketState } | null;
}

/**
 * Visibility of a thread item. Reads (spec 2.3) return only `public`; internal notes, AI drafts
 * (`prefilled_input`) and system events stay in the world for analytics.
 */
export type MessageVisibility = 'public' | 'internal_note' | 'draft' | 'system';

export interface MessageRecord {
  idx: number;
  id: string;
  ticketIdx: number;
  role: MessageRole;
  visibility: MessageVisibility;
  direction: 'inbound' | 'outbound';
  channel: Channel;
  /** Agent (human or AI) who wrote it; null for customers and for unnamed business sends. */
  authorAgentId: string | null;
  authorName: string;
  /** Stored delivery state; `queued` sends advance by age at read time (see companion/README.md). */
  status: 'queued' | 'sent' | 'delivered' | 'failed';
  createdAt: Millis;
  /** Text of messages written at run time; generated messages derive theirs from `textSeed`. */
  text: string | null;
  textSeed: number;
  attachmentIds: string[];
  visibleAt: number;
}

export type TicketEventType =
  | 'created'
  | 'status_changed'
  | 'assignee_changed'
  | 'team_changed'
  | 'priority_changed'
  | 'deleted'
  /** Restored from the trash (our choice: the spec has no restore; a real inbox has one). */
  | 'restored';

/**
 * Ticket lifecycle events, appended in time order per ticket. A reopen is a `status_changed` event from
 * `resolved`/`closed` to `open`/`need_more_info` (`isReopen`). `actorAgentId` null = customer or system.
 */
export interface TicketEvent {
  ticketIdx: number;
  type: TicketEventType;
  at: Millis;
  from: string | null;
  to: string | null;
  actorAgentId: string | null;
}

export interface SurveyRecord {
  id: string;
  orgId: string;
  ticketIdx: number;
  /** The stored credit, fixed at creation (spec 2.7 rules 1, 5). May reference a deleted agent or `'AI'`. */
  creditedAgentId: string | null;
  score: number | null;
  comment: string | null;
  sentAt: Micros;
  submittedAt: Micros | null;
  /** Never exported (spec 2.7 rule 8). */
  token: string;
  visibleAt: number;
  replicaShadow: {
    until: number;
    score: number | null;
    comment: string | null;
    submittedAt: Micros | null;
  } | null;
}

export interface SessionRecord {
  id: string;
  orgId: string;
  agentId: string;
  start: Millis;
  end: Millis | null;
  lastActivity: Millis;
  updatedAt: Millis;
  /** Never exported (spec 2.8 rule 2). */
  ip: string;
  userAgent: string;
  visibleAt: number;
  replicaShadow: { until: number; end: Millis | null; lastActivity: Millis; updatedAt: Millis } | null;
}

export const AUTOMATION_ACTION_TYPES = [
  'ai_reply',
  'auto_tag',
  'auto_assign',
  'auto_close',
  'translate',
  'summarize',
] as const;
export type AutomationActionType = (typeof AUTOMATION_ACTION_TYPES)[number];

/** An AI/automation run: actions executed, the time they saved and the AI credits they used. */
export interface AutomationRun {
  id: string;
  orgId: string;
  ticketIdx: number | null;
  agentId: string | null;
  at: Millis;
  actionType: AutomationActionType;
  /** Whether an action was actually executed (runs without a tracked action still spend credits). */
  executed: boolean;
  timeSavedSeconds: number;
  aiCredits: number;
}

/** An order paid by a customer after a conversation (for `order_paid` attribution). */
export interface OrderRecord {
  id: string;
  orgId: string;
  ticketIdx: number;
  paidAt: Millis;
  amountEur: number;
}

export interface ViewRecord {
  id: string;
  orgId: string;
  name: string;
  filters: ViewFilter[];
  shared: boolean;
  /** Agents who see this view in their inbox; null = every agent of the org. */
  visibleToAgentIds: string[] | null;
  createdAt: Millis;
}

export type KeyLabel = 'admin' | 'readonly' | 'agent_limited' | 'legacy' | 'other_org';

export interface ApiKeyRecord {
  label: KeyLabel;
  key: string;
  orgId: string;
  /** Null = legacy key with no scopes recorded: full access (spec 5.6). */
  scopes: Scope[] | null;
  agentId: string | null;
}
