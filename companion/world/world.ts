import type { Channel, MessageRole, Priority, TicketStatus, TicketType } from '../../schemas/api/index.js';
import { Prng } from './prng.js';
import type {
  AgentRecord,
  ApiKeyRecord,
  AutomationRun,
  ContactRecord,
  KeyLabel,
  MessageRecord,
  MessageVisibility,
  Millis,
  OrderRecord,
  Org,
  SessionRecord,
  SurveyRecord,
  TagRecord,
  TeamRecord,
  TicketEvent,
  TicketFieldDefinition,
  TicketFieldRawValue,
  TicketRecord,
  TicketState,
  ViewRecord,
} from './types.js';

/** Everything a world holds; produced by `generateWorld` and owned by `World`. */
export interface WorldData {
  seed: number;
  generatedAt: Millis;
  orgs: Org[];
  agents: AgentRecord[];
  teams: TeamRecord[];
  tags: TagRecord[];
  contacts: ContactRecord[];
  ticketFields: TicketFieldDefinition[];
  tickets: TicketRecord[];
  messages: MessageRecord[];
  events: TicketEvent[];
  surveys: SurveyRecord[];
  sessions: SessionRecord[];
  automationRuns: AutomationRun[];
  orders: OrderRecord[];
  views: ViewRecord[];
  keys: ApiKeyRecord[];
}

/** Run-time switches the world reads on every write. */
export interface WorldSettings {
  /** The companion clock (epoch ms). */
  now: () => Millis;
  /** Real-time source for replica lag (epoch ms). */
  realNow: () => number;
  replicaLagMs: number;
  messageBumpsTicketUpdatedAt: boolean;
}

export interface NewMessageInput {
  role: MessageRole;
  text: string;
  visibility?: MessageVisibility;
  authorAgentId?: string | null;
  authorName?: string;
  channel?: Channel;
  status?: MessageRecord['status'];
  attachmentIds?: string[];
  at?: Millis;
}

export interface NewTicketInput {
  channel: Channel;
  channelIdentifier?: string;
  subject?: string | null;
  status?: TicketStatus;
  priority?: Priority;
  tags?: string[];
  assigneeId?: string | null;
  teamId?: string | null;
  language?: string | null;
  isSpam?: boolean;
  ticketType?: TicketType;
  parentTicketId?: string | null;
  contactId?: string | null;
  metadata?: Record<string, string | number | boolean | null>;
  messages?: NewMessageInput[];
  actorAgentId?: string | null;
  at?: Millis;
}

export interface TicketChange {
  status?: TicketStatus;
  priority?: Priority;
  assigneeId?: string | null;
  teamId?: string | null;
}

interface OrgIndex {
  byNumber: Map<number, TicketRecord>;
  /** Tickets of the org ascending by (createdAt, id); lists walk it backwards. */
  sorted: TicketRecord[];
  nextNumber: number;
}

export function compareTickets(a: TicketRecord, b: TicketRecord): number {
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** A reopen: leaving a resolved/closed state for an open one. */
export function isReopen(e: TicketEvent): boolean {
  return (
    e.type === 'status_changed' &&
    (e.from === 'resolved' || e.from === 'closed') &&
    (e.to === 'open' || e.to === 'need_more_info')
  );
}

/**
 * The live world: the generated data plus indexes and the mutations a live workspace makes. All mutations
 * go through here (the HTTP routes and the test handle alike) so that events, replica lag and the
 * `messageBumpsTicketUpdatedAt` switch apply uniformly.
 */
export class World {
  readonly seed: number;
  readonly orgs: Org[];
  readonly agents: AgentRecord[];
  readonly teams: TeamRecord[];
  readonly tags: TagRecord[];
  readonly contacts: ContactRecord[];
  readonly ticketFields: TicketFieldDefinition[];
  readonly tickets: TicketRecord[];
  readonly messages: MessageRecord[];
  readonly events: TicketEvent[];
  /** Ascending by (sentAt, id). */
  readonly surveys: SurveyRecord[];
  /** Ascending by (start, id). */
  readonly sessions: SessionRecord[];
  readonly automationRuns: AutomationRun[];
  readonly orders: OrderRecord[];
  readonly views: ViewRecord[];
  readonly keys: ApiKeyRecord[];
  readonly settings: WorldSettings;

  readonly #orgIndex = new Map<string, OrgIndex>();
  readonly #ticketById = new Map<string, TicketRecord>();
  readonly #agentById = new Map<string, AgentRecord>();
  readonly #contactById = new Map<string, ContactRecord>();
  readonly #surveyById = new Map<string, SurveyRecord>();
  readonly #sessionById = new Map<string, SessionRecord>();
  readonly #keyByValue = new Map<string, ApiKeyRecord>();
  readonly #rng: Prng;

  constructor(data: WorldData, settings: WorldSettings) {
    this.seed = data.seed;
    this.orgs = data.orgs;
    this.agents = data.agents;
    this.teams = data.teams;
    this.tags = data.tags;
    this.contacts = data.contacts;
    this.ticketFields = data.ticketFields;
    this.tickets = data.tickets;
    this.messages = data.messages;
    this.events = data.events;
    this.surveys = data.surveys;
    this.sessions = data.sessions;
    this.automationRuns = data.automationRuns;
    this.orders = data.orders;
    this.views = data.views;
    this.keys = data.keys;
    this.settings = settings;
    this.#rng = new Prng(data.seed, 0x5eed);
    for (const org of this.orgs) {
      this.#orgIndex.set(org.id, { byNumber: new Map(), sorted: [], nextNumber: org.firstTicketNumber });
    }
    for (const t of this.tickets) {
      this.#indexTicket(t);
      this.#orgIndex.get(t.orgId)?.sorted.push(t);
    }
    for (const idx of this.#orgIndex.values()) idx.sorted.sort(compareTickets);
    for (const a of this.agents) this.#agentById.set(a.id, a);
    for (const c of this.contacts) this.#contactById.set(c.id, c);
    for (const s of this.surveys) this.#surveyById.set(s.id, s);
    for (const s of this.sessions) this.#sessionById.set(s.id, s);
    for (const k of this.keys) this.#keyByValue.set(k.key, k);
  }

  // ---------------------------------------------------------------- reads

  get orgA(): Org {
    return this.orgs[0] as Org;
  }
  get orgB(): Org {
    return this.orgs[1] as Org;
  }
  org(id: string): Org | undefined {
    return this.orgs.find((o) => o.id === id);
  }
  keyByValue(key: string): ApiKeyRecord | undefined {
    return this.#keyByValue.get(key);
  }
  /**
   * Revokes a key (spec 5.3: deleted in the organization's API settings): from now on it is `401
   * INVALID_API_KEY`, like any unknown key. `key(label)` still finds its record.
   */
  revokeKey(label: KeyLabel): void {
    this.#keyByValue.delete(this.key(label).key);
  }
  key(label: KeyLabel): ApiKeyRecord {
    const k = this.keys.find((x) => x.label === label);
    if (!k) throw new Error(`no key ${label}`);
    return k;
  }
  agent(id: string): AgentRecord | undefined {
    return this.#agentById.get(id);
  }
  contact(id: string): ContactRecord | undefined {
    return this.#contactById.get(id);
  }
  agentByEmail(orgId: string, email: string): AgentRecord | undefined {
    const e = email.toLowerCase();
    return this.agents.find((a) => a.orgId === orgId && a.deletedAt === null && a.email?.toLowerCase() === e);
  }
  ticketById(id: string): TicketRecord | undefined {
    return this.#ticketById.get(id);
  }
  /** A ticket by number in an org (deleted ones included; callers decide). Defaults to org A. */
  ticketByNumber(ticketNumber: number, orgId = this.orgA.id): TicketRecord | undefined {
    return this.#orgIndex.get(orgId)?.byNumber.get(ticketNumber);
  }
  /** Tickets of an org ascending by (createdAt, id), deleted ones included. */
  ticketsSorted(orgId: string): readonly TicketRecord[] {
    return this.#orgIndex.get(orgId)?.sorted ?? [];
  }
  survey(id: string): SurveyRecord | undefined {
    return this.#surveyById.get(id);
  }
  session(id: string): SessionRecord | undefined {
    return this.#sessionById.get(id);
  }
  messagesOf(ticket: TicketRecord): MessageRecord[] {
    return ticket.messageIdxs.map((i) => this.messages[i] as MessageRecord);
  }
  eventsOf(ticket: TicketRecord): TicketEvent[] {
    return this.events.filter((e) => e.ticketIdx === ticket.idx);
  }
  tagByName(orgId: string, name: string): TagRecord | undefined {
    const n = name.toLowerCase();
    return this.tags.find((t) => t.orgId === orgId && t.name.toLowerCase() === n);
  }

  /** What the read replica shows of a ticket's mutable state now (replica lag). */
  ticketReplicaState(t: TicketRecord, realNow = this.settings.realNow()): TicketState {
    return t.replicaShadow !== null && realNow < t.replicaShadow.until ? t.replicaShadow.state : t;
  }
  /** Whether the replica has the record yet. */
  isReplicated(r: { visibleAt: number }, realNow = this.settings.realNow()): boolean {
    return r.visibleAt <= realNow;
  }

  // ------------------------------------------------------------ mutations

  createTag(orgId: string, name: string, at = this.settings.now()): TagRecord {
    const existing = this.tagByName(orgId, name);
    if (existing) return existing;
    const tag: TagRecord = { id: `tag_${this.#rng.hex(6)}`, orgId, name, createdAt: at };
    this.tags.push(tag);
    return tag;
  }

  createContact(orgId: string, c: Omit<ContactRecord, 'id' | 'orgId'>): ContactRecord {
    if (c.email !== null) {
      const e = c.email.toLowerCase();
      const found = this.contacts.find((x) => x.orgId === orgId && x.email?.toLowerCase() === e);
      if (found) return found;
    }
    const contact: ContactRecord = { id: this.#rng.uuid(), orgId, ...c };
    this.contacts.push(contact);
    this.#contactById.set(contact.id, contact);
    return contact;
  }

  createTicket(input: NewTicketInput, orgId = this.orgA.id): TicketRecord {
    const org = this.org(orgId);
    const index = this.#orgIndex.get(orgId);
    if (!org || !index) throw new Error(`unknown org ${orgId}`);
    const at = input.at ?? this.settings.now();
    const identifier =
      input.channelIdentifier ??
      org.channels.find((c) => c.type === input.channel)?.identifier ??
      input.channel;
    for (const name of input.tags ?? []) this.createTag(orgId, name, at);
    const status = input.status ?? 'open';
    const ticket: TicketRecord = {
      idx: this.tickets.length,
      id: this.#rng.uuid(),
      orgId,
      number: index.nextNumber,
      subject: input.subject ?? null,
      status,
      priority: input.priority ?? 'medium',
      assigneeId: input.assigneeId ?? null,
      teamId: input.teamId ?? null,
      updatedAt: at,
      resolvedAt: status === 'resolved' || status === 'closed' ? at : null,
      tags: [...new Set((input.tags ?? []).map((n) => this.tagByName(orgId, n)?.name ?? n))],
      channel: input.channel,
      channelIdentifier: identifier,
      createdAt: at,
      contactId: input.contactId ?? null,
      ticketType: input.ticketType ?? 'regular',
      parentTicketId: input.parentTicketId ?? null,
      language: input.language ?? null,
      isSpam: input.isSpam ?? false,
      resolvedBy: status === 'resolved' || status === 'closed' ? (input.actorAgentId ?? null) : null,
      imported: false,
      deletedAt: null,
      fieldValues: this.ticketFields.filter((f) => f.orgId === orgId).map(() => null),
      metadata: input.metadata ?? {},
      messageIdxs: [],
      visibleAt: this.#visibleAt(),
      replicaShadow: null,
    };
    this.tickets.push(ticket);
    this.#indexTicket(ticket);
    insertSorted(index.sorted, ticket, compareTickets);
    this.events.push({
      ticketIdx: ticket.idx,
      type: 'created',
      at,
      from: null,
      to: status,
      actorAgentId: input.actorAgentId ?? null,
    });
    for (const m of input.messages ?? []) this.#appendMessage(ticket, { ...m, at: m.at ?? at }, false);
    return ticket;
  }

  /**
   * An admin adds a custom ticket field (spec 2.2 leaves field administration out; the companion's choice):
   * it is listed on every ticket of the org from now on, with the value `valueFor` gives each existing ticket
   * (tickets created later start with null, as for every field). Tickets' `updated_at` does not move.
   */
  addTicketField(
    orgId: string,
    field: Omit<TicketFieldDefinition, 'id' | 'orgId'>,
    valueFor: (ticket: TicketRecord) => TicketFieldRawValue = () => null,
  ): TicketFieldDefinition {
    const def: TicketFieldDefinition = { id: `fld_${this.#rng.hex(5)}`, orgId, ...field };
    this.ticketFields.push(def);
    // Values are kept by position among the org's fields, so the new one goes last on each ticket.
    for (const t of this.tickets) if (t.orgId === orgId) t.fieldValues.push(valueFor(t));
    return def;
  }

  /** Changes status, priority, assignee or team, recording one event per changed attribute. */
  updateTicket(ticket: TicketRecord, change: TicketChange, actorAgentId: string | null = null, at?: Millis) {
    const when = at ?? this.settings.now();
    this.#shadow(ticket);
    const record = (type: TicketEvent['type'], from: string | null, to: string | null) =>
      this.events.push({ ticketIdx: ticket.idx, type, at: when, from, to, actorAgentId });
    if (change.status !== undefined && change.status !== ticket.status) {
      record('status_changed', ticket.status, change.status);
      const wasDone = ticket.status === 'resolved' || ticket.status === 'closed';
      if (change.status === 'resolved') {
        ticket.resolvedAt = when;
        ticket.resolvedBy = actorAgentId ?? ticket.assigneeId;
      } else if (change.status !== 'closed' && wasDone) {
        ticket.resolvedAt = null;
      }
      ticket.status = change.status;
    }
    if (change.priority !== undefined && change.priority !== ticket.priority) {
      record('priority_changed', ticket.priority, change.priority);
      ticket.priority = change.priority;
    }
    if (change.assigneeId !== undefined && change.assigneeId !== ticket.assigneeId) {
      record('assignee_changed', ticket.assigneeId, change.assigneeId);
      ticket.assigneeId = change.assigneeId;
    }
    if (change.teamId !== undefined && change.teamId !== ticket.teamId) {
      record('team_changed', ticket.teamId, change.teamId);
      ticket.teamId = change.teamId;
    }
    ticket.updatedAt = when;
  }

  /** Test handle: sets a ticket's status by number (org A unless given). */
  setTicketStatus(
    ticketNumber: number,
    status: TicketStatus,
    opts: { at?: Millis; actorAgentId?: string | null; orgId?: string } = {},
  ): TicketRecord {
    const t = this.#mustTicket(ticketNumber, opts.orgId);
    this.updateTicket(t, { status }, opts.actorAgentId ?? null, opts.at);
    return t;
  }

  /** Adds a thread item. Moves the ticket's `updated_at` unless `messageBumpsTicketUpdatedAt` is off. */
  addMessage(ticketNumber: number, input: NewMessageInput, orgId?: string): MessageRecord {
    return this.appendMessage(this.#mustTicket(ticketNumber, orgId), input);
  }

  appendMessage(ticket: TicketRecord, input: NewMessageInput): MessageRecord {
    return this.#appendMessage(ticket, input, this.settings.messageBumpsTicketUpdatedAt);
  }

  /** Sends a CSAT survey for a ticket now, credited by the default rule of spec 2.7 unless given. */
  sendSurvey(
    ticketNumber: number,
    opts: { at?: Millis; creditedAgentId?: string | null; orgId?: string } = {},
  ) {
    const t = this.#mustTicket(ticketNumber, opts.orgId);
    const at = opts.at ?? this.settings.now();
    const survey: SurveyRecord = {
      id: this.#rng.uuid(),
      orgId: t.orgId,
      ticketIdx: t.idx,
      creditedAgentId: opts.creditedAgentId !== undefined ? opts.creditedAgentId : this.defaultCredit(t),
      score: null,
      comment: null,
      sentAt: at * 1000 + (this.#rng.u32() % 1000),
      submittedAt: null,
      token: this.#rng.hex(16),
      visibleAt: this.#visibleAt(),
      replicaShadow: null,
    };
    insertSorted(this.surveys, survey, compareSurveySent); // exports binary-search (sentAt, id) order
    this.#surveyById.set(survey.id, survey);
    return survey;
  }

  /**
   * Default credit (spec 2.7 rules 2–4, 6): the recorded resolver, only when the ticket is `resolved` and the
   * resolver is an eligible agent of the same workspace; never the legacy `AI` marker or an AI agent excluded
   * from analytics; no fallback to assignee or author.
   */
  defaultCredit(t: TicketRecord): string | null {
    if (t.status !== 'resolved' || t.resolvedBy === null || t.resolvedBy === 'AI') return null;
    const a = this.agent(t.resolvedBy);
    if (!a || a.orgId !== t.orgId || a.deletedAt !== null || a.excludedFromAnalytics) return null;
    return a.id;
  }

  answerSurvey(id: string, score: number | null, comment: string | null, at?: Millis): SurveyRecord {
    const s = this.#surveyById.get(id);
    if (!s) throw new Error(`unknown survey ${id}`);
    this.#keepForReplica(s, { score: s.score, comment: s.comment, submittedAt: s.submittedAt });
    s.score = score;
    s.comment = comment;
    s.submittedAt = (at ?? this.settings.now()) * 1000 + (this.#rng.u32() % 1000);
    return s;
  }

  startSession(agentId: string, at?: Millis): SessionRecord {
    const a = this.agent(agentId);
    if (!a) throw new Error(`unknown agent ${agentId}`);
    const start = at ?? this.settings.now();
    const s: SessionRecord = {
      id: this.#rng.uuid(),
      orgId: a.orgId,
      agentId,
      start,
      end: null,
      lastActivity: start,
      updatedAt: start,
      ip: '203.0.113.9',
      userAgent: 'Mozilla/5.0',
      visibleAt: this.#visibleAt(),
      replicaShadow: null,
    };
    insertSorted(this.sessions, s, compareSessions);
    this.#sessionById.set(s.id, s);
    return s;
  }

  endSession(id: string, at?: Millis): SessionRecord {
    const s = this.#sessionById.get(id);
    if (!s) throw new Error(`unknown session ${id}`);
    const end = at ?? this.settings.now();
    this.#keepForReplica(s, { end: s.end, lastActivity: s.lastActivity, updatedAt: s.updatedAt });
    s.end = end;
    s.lastActivity = Math.max(s.lastActivity, Math.min(end, s.lastActivity + 60_000));
    s.updatedAt = end;
    return s;
  }

  deleteTicket(ticketNumber: number, orgId?: string, at?: Millis): TicketRecord {
    const t = this.#mustTicket(ticketNumber, orgId);
    const when = at ?? this.settings.now();
    t.deletedAt = when;
    this.events.push({
      ticketIdx: t.idx,
      type: 'deleted',
      at: when,
      from: null,
      to: null,
      actorAgentId: null,
    });
    return t;
  }

  /**
   * Restores a deleted ticket (a real inbox's "restore from trash"; not in the spec — see companion/README.md):
   * it is listed and readable again, and its surveys are exported again (spec 2.7 rule 7 no longer excludes
   * them). `updated_at` is left alone, as the restore does not change the ticket itself.
   */
  restoreTicket(ticketNumber: number, orgId?: string, at?: Millis): TicketRecord {
    const t = this.#mustTicket(ticketNumber, orgId);
    if (t.deletedAt === null) return t;
    t.deletedAt = null;
    this.events.push({
      ticketIdx: t.idx,
      type: 'restored',
      at: at ?? this.settings.now(),
      from: null,
      to: null,
      actorAgentId: null,
    });
    return t;
  }

  recordAutomationRun(run: Omit<AutomationRun, 'id'>): AutomationRun {
    const r: AutomationRun = { id: this.#rng.uuid(), ...run };
    this.automationRuns.push(r);
    return r;
  }

  /** A fresh random UUID from the world's stream (ids of attachments and the like). */
  newId(): string {
    return this.#rng.uuid();
  }

  // ------------------------------------------------------------- internal

  #indexTicket(t: TicketRecord) {
    const index = this.#orgIndex.get(t.orgId);
    if (!index) throw new Error(`ticket ${t.id} of unknown org`);
    index.byNumber.set(t.number, t);
    if (t.number >= index.nextNumber) index.nextNumber = t.number + 1;
    this.#ticketById.set(t.id, t);
  }

  #mustTicket(ticketNumber: number, orgId?: string): TicketRecord {
    const t = this.ticketByNumber(ticketNumber, orgId ?? this.orgA.id);
    if (!t) throw new Error(`unknown ticket number ${ticketNumber}`);
    return t;
  }

  #visibleAt(): number {
    return this.settings.realNow() + this.settings.replicaLagMs;
  }

  /** Replica lag: the replica keeps showing a survey's or session's `previous` values until the change is visible. */
  #keepForReplica<T>(r: { replicaShadow: (T & { until: number }) | null }, previous: T): void {
    if (this.settings.replicaLagMs > 0) r.replicaShadow = { until: this.#visibleAt(), ...previous };
  }

  #shadow(t: TicketRecord) {
    if (this.settings.replicaLagMs <= 0) return;
    const realNow = this.settings.realNow();
    const until = realNow + this.settings.replicaLagMs;
    if (t.replicaShadow !== null && realNow < t.replicaShadow.until) {
      t.replicaShadow.until = until; // the replica still shows the older state
      return;
    }
    t.replicaShadow = {
      until,
      state: {
        status: t.status,
        priority: t.priority,
        assigneeId: t.assigneeId,
        teamId: t.teamId,
        updatedAt: t.updatedAt,
        resolvedAt: t.resolvedAt,
        tags: t.tags,
      },
    };
  }

  #appendMessage(ticket: TicketRecord, input: NewMessageInput, bump: boolean): MessageRecord {
    const at = input.at ?? this.settings.now();
    const author = input.authorAgentId ? this.agent(input.authorAgentId) : undefined;
    const m: MessageRecord = {
      idx: this.messages.length,
      id: this.#rng.uuid(),
      ticketIdx: ticket.idx,
      role: input.role,
      visibility: input.visibility ?? 'public',
      direction: input.role === 'customer' ? 'inbound' : 'outbound',
      channel: input.channel ?? ticket.channel,
      authorAgentId: input.authorAgentId ?? null,
      authorName: input.authorName ?? author?.name ?? (input.role === 'customer' ? 'Customer' : 'Support'),
      status: input.status ?? (input.role === 'customer' ? 'delivered' : 'queued'),
      createdAt: at,
      text: input.text,
      textSeed: 0,
      attachmentIds: input.attachmentIds ?? [],
      visibleAt: this.#visibleAt(),
    };
    this.messages.push(m);
    ticket.messageIdxs.push(m.idx);
    if (bump) {
      this.#shadow(ticket);
      ticket.updatedAt = Math.max(ticket.updatedAt, at);
    }
    return m;
  }
}

/**
 * Inserts `item` into `list`, which is kept in `cmp` order. A new record is nearly always the newest, so the
 * walk starts from the end.
 */
function insertSorted<T>(list: T[], item: T, cmp: (a: T, b: T) => number): void {
  let pos = list.length;
  while (pos > 0 && cmp(list[pos - 1] as T, item) > 0) pos--;
  list.splice(pos, 0, item);
}

export function compareSurveySent(a: SurveyRecord, b: SurveyRecord): number {
  return a.sentAt - b.sentAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export function compareSessions(a: SessionRecord, b: SessionRecord): number {
  return a.start - b.start || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
