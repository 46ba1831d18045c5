/**
 * The worlds of bench:workspaces, and what they hold as the warehouse should hold it: the sizes of each
 * workspace (drawn from a seeded generator), the rows a sync of it must store (the exactness check) and the
 * requests it needs at least (the lower bound), both read off the companion's world with the same rules its
 * routes apply, so that neither costs a request.
 */

import { readable, viewVisible } from '../../companion/rules/views.js';
import { Prng, type TicketRecord, type World } from '../../companion/world/index.js';
import { planWindows } from '../../connectors/support-api/index.js';
import { MAX_EXPORT_WINDOW_MS } from '../../schemas/api/exports.js';
import { pagesAt100, sum } from './harness.js';

/** One workspace of the companion: its slug, world seed and tickets. */
export interface WorkspaceSpec {
  id: string;
  seed: number;
  tickets: number;
}

/** The tables the exactness check compares, each with the rows a complete sync leaves live in it. */
export const CHECKED_TABLES = ['tickets', 'ticket_messages', 'csat_surveys', 'agent_sessions'] as const;
export type CheckedTable = (typeof CHECKED_TABLES)[number];

/**
 * `count` small workspaces of `min`–`max` tickets each (uniform, from `seed`), `small-<i>` each with a
 * seed of its own, so no two worlds are the same.
 */
export function smallWorkspaces(count: number, seed: number, min = 20, max = 200): WorkspaceSpec[] {
  const rng = new Prng(seed, 44);
  return Array.from({ length: count }, (_, i) => ({
    id: `small-${i}`,
    seed: seed * 10_000 + i,
    tickets: rng.int(min, max),
  }));
}

/** The period a sync reads: SYNC_START_DATE → the run's start. */
export interface ReadScope {
  startMs: number;
  untilMs: number;
}

/** Rows a complete sync of `world` over `scope` leaves live (not marked deleted) in each checked table. */
export function expectedRows(world: World, scope: ReadScope): Record<CheckedTable, number> {
  const c = worldContent(world, scope);
  return {
    tickets: c.tickets.length,
    ticket_messages: sum(c.messagesPerThread),
    csat_surveys: c.surveysSent.length,
    agent_sessions: c.sessions.length,
  };
}

/**
 * The requests a sync of `world` over `scope` needs at least, at the maximum page size (100), as
 * bench/support/crawl.ts counts them by crawling: the ticket list's pages; one thread read per ticket
 * created since the start (more for a thread of over 100 messages); per export window (90 days, the
 * sync's plan) the CSAT export's pages by sent date and the agent sessions' pages overlapping it; the
 * reference lists (views, tags, teams, agents) and the metric catalog, one page each at least.
 */
export function requestBound(
  world: World,
  scope: ReadScope,
): Record<'tickets' | 'threads' | 'exports' | 'reference', number> {
  const c = worldContent(world, scope);
  let exportPages = 0;
  for (const w of planWindows({
    from: new Date(scope.startMs).toISOString(),
    to: new Date(scope.untilMs).toISOString(),
    maxWindowMs: MAX_EXPORT_WINDOW_MS,
  })) {
    const [from, before] = [Date.parse(w.windowStart), Date.parse(w.windowEnd)];
    const surveys = c.surveysSent.filter((sentMs) => sentMs >= from && sentMs < before).length;
    const sessions = c.sessions.filter((s) => s.start < before && (s.end === null || s.end > from)).length;
    exportPages += pagesAt100(surveys) + pagesAt100(sessions);
  }
  const org = world.orgA.id;
  const reference = [
    world.views.filter((v) => viewVisible(v, world.key('admin'))).length,
    world.tags.filter((t) => t.orgId === org).length,
    world.teams.filter((t) => t.orgId === org).length,
    world.agents.filter((a) => a.orgId === org && a.deletedAt === null).length,
  ];
  return {
    tickets: pagesAt100(c.tickets.length),
    threads: sum(c.messagesPerThread.map(pagesAt100)),
    exports: exportPages,
    reference: sum(reference.map(pagesAt100)) + 1,
  };
}

/**
 * What the API serves the admin key of `world`'s main organization over `scope`: tickets listed, the
 * public messages of each thread a sync reads (tickets created since the start), the surveys the CSAT
 * export gives by sent date (eligible ones, spec 2.7 rule 7; their sent instants in ms), and the sessions
 * overlapping the period.
 */
function worldContent(world: World, scope: ReadScope) {
  const org = world.orgA.id;
  const now = world.settings.realNow();
  const tickets = world.ticketsSorted(org).filter((t) => readable(world, t, now));
  const messagesPerThread = tickets
    .filter((t) => t.createdAt >= scope.startMs)
    .map((t) => world.messagesOf(t).filter((m) => m.visibility === 'public' && m.visibleAt <= now).length);
  const eligible = (t: TicketRecord | undefined) =>
    t !== undefined && t.deletedAt === null && t.ticketType !== 'side' && !t.imported;
  const surveysSent = world.surveys
    .filter((s) => s.orgId === org && s.visibleAt <= now && eligible(world.tickets[s.ticketIdx]))
    .map((s) => s.sentAt / 1000)
    .filter((ms) => ms >= scope.startMs && ms < scope.untilMs);
  const sessions = world.sessions.filter(
    (s) =>
      s.orgId === org &&
      s.visibleAt <= now &&
      s.start < scope.untilMs &&
      (s.end === null || s.end > scope.startMs),
  );
  return { tickets, messagesPerThread, surveysSent, sessions };
}
