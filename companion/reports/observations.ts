import {
  AUTOMATION_ACTION_TYPES,
  isReopen,
  type TicketEvent,
  type TicketRecord,
  type World,
} from '../world/index.js';

/**
 * Column-oriented observation sets, sorted by time: one row per counted item (a ticket creation, a reply, a
 * resolution event, a survey, an automation run …). The engine aggregates rows whose time falls in a bucket.
 * Sets derived from the append-only history are built once per org and world version and cached; sets that
 * depend on mutable state or on the clock (surveys, snapshots, SLA breaches) are rebuilt per query — they are
 * small or a single pass over the tickets.
 */
export interface Obs {
  n: number;
  /** Epoch ms that dates the row (its attribution event). */
  at: Float64Array;
  /** World ticket index, or -1 for rows without a ticket. */
  t: Int32Array;
  v: Float64Array;
  /** Agent the row is credited to (index into `OrgIndex.agentIds`), or -1. */
  a: Int32Array;
  /** Auxiliary category (automation action type index), or -1. */
  k: Int32Array;
  /** Real-time ms from which the replica shows the row's source record. */
  vis: Float64Array;
}

interface Row {
  at: number;
  t: number;
  v: number;
  a: number;
  k: number;
  vis: number;
}

class ObsBuilder {
  readonly rows: Row[] = [];
  #sorted = true;
  #last = Number.NEGATIVE_INFINITY;
  add(at: number, t: number, v: number, a = -1, k = -1, vis = 0): void {
    if (at < this.#last) this.#sorted = false;
    this.#last = at;
    this.rows.push({ at, t, v, a, k, vis });
  }
  build(): Obs {
    // Most sources arrive in time order already (tickets by creation, surveys by sent date): sort only if not.
    const rows = this.#sorted ? this.rows : this.rows.sort((x, y) => x.at - y.at);
    const n = rows.length;
    const o: Obs = {
      n,
      at: new Float64Array(n),
      t: new Int32Array(n),
      v: new Float64Array(n),
      a: new Int32Array(n),
      k: new Int32Array(n),
      vis: new Float64Array(n),
    };
    for (let i = 0; i < n; i++) {
      const r = rows[i] as Row;
      o.at[i] = r.at;
      o.t[i] = r.t;
      o.v[i] = r.v;
      o.a[i] = r.a;
      o.k[i] = r.k;
      o.vis[i] = r.vis;
    }
    return o;
  }
}

/** Per-ticket facts derived from its thread and events, computed once per index. */
interface TicketFacts {
  firstCustomerAt: number;
  firstReplyAt: number;
  firstReplyAgent: number;
  firstReplyVis: number;
  firstHumanReplyAt: number;
  firstHumanAgent: number;
  firstHumanVis: number;
  publicMessages: number;
  customerMessages: number;
  publicReplies: number;
  reopens: number;
}

const HOUR = 3_600_000;
/** SLA targets of our SLA metrics (see catalog.ts). */
export const FIRST_RESPONSE_TARGET_MS: Record<string, number> = {
  urgent: HOUR,
  high: 4 * HOUR,
  medium: 8 * HOUR,
  low: 24 * HOUR,
  none: 24 * HOUR,
};
export const RESOLUTION_TARGET_MS: Record<string, number> = {
  urgent: 8 * HOUR,
  high: 24 * HOUR,
  medium: 72 * HOUR,
  low: 120 * HOUR,
  none: 120 * HOUR,
};

/** The cached, version-keyed index of one org. */
export class OrgIndex {
  readonly agentIds: string[] = [];
  readonly #agentIdx = new Map<string, number>();
  /** Tickets of the org (all, deleted included; the query mask decides). */
  readonly tickets: TicketRecord[];
  readonly facts = new Map<number, TicketFacts>();
  /** Events of the org's tickets, grouped per ticket in time order. */
  readonly eventsByTicket = new Map<number, TicketEvent[]>();
  readonly #cache = new Map<string, Obs>();

  constructor(
    readonly world: World,
    readonly orgId: string,
    readonly version: string,
  ) {
    for (const a of world.agents) if (a.orgId === orgId) this.agent(a.id);
    this.tickets = world.tickets.filter((t) => t.orgId === orgId);
    for (const e of world.events) {
      const t = world.tickets[e.ticketIdx];
      if (!t || t.orgId !== orgId) continue;
      let list = this.eventsByTicket.get(e.ticketIdx);
      if (!list) {
        list = [];
        this.eventsByTicket.set(e.ticketIdx, list);
      }
      list.push(e);
    }
    for (const list of this.eventsByTicket.values()) list.sort((x, y) => x.at - y.at);
    for (const t of this.tickets) this.facts.set(t.idx, this.#facts(t));
  }

  /** Index of an agent id (registering unknown ids such as the legacy `AI` marker). */
  agent(id: string | null): number {
    if (id === null) return -1;
    let i = this.#agentIdx.get(id);
    if (i === undefined) {
      i = this.agentIds.length;
      this.agentIds.push(id);
      this.#agentIdx.set(id, i);
    }
    return i;
  }

  isAiAgent(id: string | null): boolean {
    if (id === null) return false;
    return id === 'AI' || this.world.agent(id)?.kind === 'ai';
  }

  #facts(t: TicketRecord): TicketFacts {
    const f: TicketFacts = {
      firstCustomerAt: Number.NaN,
      firstReplyAt: Number.NaN,
      firstReplyAgent: -1,
      firstReplyVis: 0,
      firstHumanReplyAt: Number.NaN,
      firstHumanAgent: -1,
      firstHumanVis: 0,
      publicMessages: 0,
      customerMessages: 0,
      publicReplies: 0,
      reopens: 0,
    };
    for (const mi of t.messageIdxs) {
      const m = this.world.messages[mi];
      if (m?.visibility !== 'public') continue;
      f.publicMessages++;
      if (m.role === 'customer') {
        f.customerMessages++;
        if (Number.isNaN(f.firstCustomerAt)) f.firstCustomerAt = m.createdAt;
        continue;
      }
      f.publicReplies++;
      if (Number.isNaN(f.firstCustomerAt) || m.createdAt < f.firstCustomerAt) continue;
      if (Number.isNaN(f.firstReplyAt)) {
        f.firstReplyAt = m.createdAt;
        f.firstReplyAgent = this.agent(m.authorAgentId);
        f.firstReplyVis = m.visibleAt;
      }
      if (m.role === 'agent' && Number.isNaN(f.firstHumanReplyAt)) {
        f.firstHumanReplyAt = m.createdAt;
        f.firstHumanAgent = this.agent(m.authorAgentId);
        f.firstHumanVis = m.visibleAt;
      }
    }
    for (const e of this.eventsByTicket.get(t.idx) ?? []) if (isReopen(e)) f.reopens++;
    return f;
  }

  /** A cached observation set, built by `make` once per index. */
  cached(name: string, make: (b: ObsBuilder) => void): Obs {
    let o = this.#cache.get(name);
    if (!o) {
      const b = new ObsBuilder();
      make(b);
      o = b.build();
      this.#cache.set(name, o);
    }
    return o;
  }

  fresh(make: (b: ObsBuilder) => void): Obs {
    const b = new ObsBuilder();
    make(b);
    return b.build();
  }
}

export type { ObsBuilder };

const indexes = new WeakMap<World, Map<string, OrgIndex>>();

/**
 * The org's index for the world's current version. Every mutation of the history appends a ticket, message,
 * event, automation run or order, so the lengths of those arrays identify a version.
 */
export function orgIndex(world: World, orgId: string): OrgIndex {
  const version = [
    world.tickets.length,
    world.messages.length,
    world.events.length,
    world.automationRuns.length,
    world.orders.length,
  ].join(':');
  let perOrg = indexes.get(world);
  if (!perOrg) {
    perOrg = new Map();
    indexes.set(world, perOrg);
  }
  let ix = perOrg.get(orgId);
  if (!ix || ix.version !== version) {
    ix = new OrgIndex(world, orgId, version);
    perOrg.set(orgId, ix);
  }
  return ix;
}

export const ACTION_TYPES = AUTOMATION_ACTION_TYPES;
