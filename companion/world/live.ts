import type { Priority, TicketStatus } from '../../schemas/api/index.js';
import { Prng } from './prng.js';
import type { AgentRecord, SessionRecord, SurveyRecord, TicketRecord } from './types.js';
import type { World } from './world.js';

/** The kinds of change a living workspace makes, with their relative frequency. */
export const LIVE_CHANGE_WEIGHTS = {
  ticket_created: 14,
  reply: 20,
  status_changed: 14,
  priority_changed: 6,
  assignee_changed: 6,
  survey_sent: 10,
  survey_answered: 10,
  session_started: 6,
  session_ended: 8,
  ticket_deleted: 2,
  ticket_restored: 1,
} as const;
export type LiveChangeKind = keyof typeof LIVE_CHANGE_WEIGHTS;
const KINDS = Object.keys(LIVE_CHANGE_WEIGHTS) as LiveChangeKind[];

/** What one or more ticks changed: counts per kind and what they touched. */
export interface LiveChanges {
  counts: Record<LiveChangeKind, number>;
  tickets: number[];
  surveys: string[];
  sessions: string[];
}

const PRIORITIES: readonly Priority[] = ['none', 'urgent', 'high', 'medium', 'low'];
const SUBJECTS = [
  'Order not received',
  'Refund request',
  'Cannot log in',
  'Invoice question',
  'Damaged item',
];
const REPLIES = [
  'Any update on this?',
  'Thanks, that worked.',
  'Still not fixed.',
  'Here is the photo you asked for.',
];

/**
 * A living workspace: each tick applies a few realistic changes to the world through its own mutations (so
 * events, replica lag, `messageBumpsTicketUpdatedAt` and the credit rules of spec 2.7 apply as to API
 * writes). Tickets are picked across the whole history, not only recent ones: replies and status changes on
 * tickets months old are what a change sweep must catch. Deterministic for a seed and a sequence of ticks
 * (its own random stream; the clock only stamps the changes).
 */
export class LiveWorld {
  readonly #world: World;
  readonly #rng: Prng;
  /** The instant of the changes being applied (undefined: the world's clock). */
  #at: number | undefined;

  constructor(world: World, seed: number) {
    this.#world = world;
    this.#rng = new Prng(seed, 0x11fe);
  }

  /** Applies `changes` changes, stamped `at` (default: the world's clock), and says what they were. */
  tick(changes = 3, at?: number): LiveChanges {
    this.#at = at;
    const out: LiveChanges = {
      counts: Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<LiveChangeKind, number>,
      tickets: [],
      surveys: [],
      sessions: [],
    };
    for (let i = 0; i < changes; i++) {
      // A kind that has nothing to act on (no deleted ticket to restore…) falls back to a reply.
      const kind = this.#rng.weighted(
        KINDS,
        KINDS.map((k) => LIVE_CHANGE_WEIGHTS[k]),
      );
      if (!this.#apply(kind, out) && kind !== 'reply') this.#apply('reply', out);
    }
    return out;
  }

  #apply(kind: LiveChangeKind, out: LiveChanges): boolean {
    const w = this.#world;
    const note = (k: LiveChangeKind, what: { ticket?: number; survey?: string; session?: string }) => {
      out.counts[k] += 1;
      if (what.ticket !== undefined) out.tickets.push(what.ticket);
      if (what.survey !== undefined) out.surveys.push(what.survey);
      if (what.session !== undefined) out.sessions.push(what.session);
      return true;
    };
    switch (kind) {
      case 'ticket_created': {
        const org = w.orgA;
        const channel = this.#rng.pick(org.channels).type;
        const t = w.createTicket({
          ...(this.#at !== undefined ? { at: this.#at } : {}),
          channel,
          subject: this.#rng.pick(SUBJECTS),
          priority: this.#rng.pick(PRIORITIES),
          messages: [
            {
              role: 'customer',
              text: 'Hello, I need help with my order.',
              ...(this.#at !== undefined ? { at: this.#at } : {}),
            },
          ],
        });
        return note(kind, { ticket: t.number });
      }
      case 'reply': {
        const t = this.#liveTicket();
        if (!t) return false;
        const agent = this.#rng.chance(0.5) ? this.#human() : null;
        const at = this.#at !== undefined ? { at: this.#at } : {};
        w.appendMessage(
          t,
          agent
            ? {
                role: 'agent',
                text: this.#rng.pick(REPLIES),
                authorAgentId: agent.id,
                authorName: agent.name,
                ...at,
              }
            : { role: 'customer', text: this.#rng.pick(REPLIES), ...at },
        );
        return note(kind, { ticket: t.number });
      }
      case 'status_changed': {
        const t = this.#liveTicket();
        if (!t) return false;
        const done = t.status === 'resolved' || t.status === 'closed';
        // Open tickets get resolved (by a human); resolved ones are reopened or closed.
        const next: TicketStatus = done
          ? this.#rng.chance(0.6)
            ? 'open'
            : 'closed'
          : this.#rng.pick<TicketStatus>(['resolved', 'resolved', 'need_more_info']);
        if (next === t.status) return false;
        w.updateTicket(
          t,
          { status: next },
          next === 'resolved' ? (this.#human()?.id ?? null) : null,
          this.#at,
        );
        return note(kind, { ticket: t.number });
      }
      case 'priority_changed': {
        const t = this.#liveTicket();
        if (!t) return false;
        const priority = this.#rng.pick(PRIORITIES.filter((p) => p !== t.priority));
        w.updateTicket(t, { priority }, null, this.#at);
        return note(kind, { ticket: t.number });
      }
      case 'assignee_changed': {
        const t = this.#liveTicket();
        const agent = this.#human();
        if (!t || !agent || agent.id === t.assigneeId) return false;
        w.updateTicket(t, { assigneeId: agent.id }, null, this.#at);
        return note(kind, { ticket: t.number });
      }
      case 'survey_sent': {
        // A survey goes out on a resolved ticket that has none; its credit follows spec 2.7 (sendSurvey).
        const surveyed = new Set(w.surveys.map((s) => s.ticketIdx));
        const candidates = this.#liveTickets().filter((t) => t.status === 'resolved' && !surveyed.has(t.idx));
        if (candidates.length === 0) return false;
        const t = this.#rng.pick(candidates);
        const s = w.sendSurvey(t.number, this.#at !== undefined ? { at: this.#at } : {});
        return note(kind, { ticket: t.number, survey: s.id });
      }
      case 'survey_answered': {
        // Late answers: any unanswered survey, however long ago it was sent.
        const open = w.surveys.filter((s: SurveyRecord) => s.submittedAt === null && s.orgId === w.orgA.id);
        if (open.length === 0) return false;
        const s = this.#rng.pick(open);
        const score = this.#rng.weighted([1, 2, 3, 4, 5], [1, 1, 2, 4, 6]);
        w.answerSurvey(s.id, score, this.#rng.chance(0.3) ? 'Late but fine' : null, this.#at);
        return note(kind, { survey: s.id });
      }
      case 'session_started': {
        const agent = this.#human();
        if (!agent) return false;
        const s = w.startSession(agent.id, this.#at);
        return note(kind, { session: s.id });
      }
      case 'session_ended': {
        const open = w.sessions.filter((s: SessionRecord) => s.end === null && s.orgId === w.orgA.id);
        if (open.length === 0) return false;
        const s = this.#rng.pick(open);
        w.endSession(s.id, this.#at);
        return note(kind, { session: s.id });
      }
      case 'ticket_deleted': {
        const t = this.#liveTicket();
        if (!t) return false;
        w.deleteTicket(t.number, undefined, this.#at);
        return note(kind, { ticket: t.number });
      }
      case 'ticket_restored': {
        const deleted = w.ticketsSorted(w.orgA.id).filter((t) => t.deletedAt !== null);
        if (deleted.length === 0) return false;
        const t = this.#rng.pick(deleted);
        w.restoreTicket(t.number, undefined, this.#at);
        return note(kind, { ticket: t.number });
      }
    }
  }

  #liveTickets(): TicketRecord[] {
    return this.#world
      .ticketsSorted(this.#world.orgA.id)
      .filter((t) => t.deletedAt === null && t.ticketType === 'regular' && !t.isSpam);
  }

  /** A live regular ticket, anywhere in the history. */
  #liveTicket(): TicketRecord | null {
    const all = this.#liveTickets();
    return all.length === 0 ? null : this.#rng.pick(all);
  }

  /** An active human agent of org A. */
  #human(): AgentRecord | null {
    const humans = this.#world.agents.filter(
      (a) => a.orgId === this.#world.orgA.id && a.kind === 'human' && a.deletedAt === null && a.active,
    );
    return humans.length === 0 ? null : this.#rng.pick(humans);
  }
}
