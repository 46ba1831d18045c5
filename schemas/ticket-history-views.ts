import { z } from 'zod';
import { Timestamp } from './api/index.js';
import { deriveColumns } from './warehouse.js';
import type { SqlDialect, ViewColumn, ViewSpec } from './warehouse-views.js';

/**
 * The views over what the ticket sweep observed (`ticket_observations`): the status history of each ticket,
 * the reopens and resolutions it shows, the daily backlog it implies, and agent online time per day. Their
 * definitions follow the report API's (spec 2.11) so that the tie-out (activities/reconcile.ts) can put the
 * warehouse's number beside the API's.
 */

const columns = (view: string, types: z.ZodObject, descriptions: Readonly<Record<string, string>>) =>
  deriveColumns(view, types, { descriptions }).map(
    (c): ViewColumn => ({ name: c.name, type: c.type, description: c.description }),
  );

const DONE = "('resolved', 'closed')";
const OPEN = "('open', 'need_more_info')";

// --- ticket_history -------------------------------------------------------------------------------------

/** How a `ticket_history` interval's start is known. */
export const VALID_FROM_PRECISION = {
  created:
    'the first sighting shows the ticket never changed (updated_at = created_at): the state held since creation',
  first_seen:
    'the first sighting of a ticket that had changed before: the state held at least since its updated_at; what came before is not known (first sync, full refresh of an empty table, or the ticket was first seen)',
  resolved_at: 'a move to resolved or closed whose resolved_at falls after the previous sighting: exact',
  updated_at:
    "the ticket's updated_at moved since the previous sighting: the change happened after changed_after and at or before valid_from; exact when the ticket changed once between the two sightings",
  sweep:
    'a change the source did not stamp (updated_at did not move, e.g. tags): the sweep that saw it; it happened after changed_after',
} as const;

const ticketHistorySql = (d: SqlDialect) => {
  const order = 'PARTITION BY ticket_id ORDER BY updated_at, observed_at, state_hash';
  return `WITH o AS (
  SELECT ob.ticket_id, ob.ticket_number, ob.updated_at, ob.observed_at, ob.state_hash, ob.status, ob.priority,
    ob.assignee_id, ob.team_id, ob.tags, ob.created_at, ob.resolved_at, ob.first_seen,
    LAG(ob.state_hash) OVER (${order}) AS prev_hash,
    LAG(ob.updated_at) OVER (${order}) AS prev_updated_at,
    LAG(ob.observed_at) OVER (${order}) AS prev_observed_at,
    LAG(ob.status) OVER (${order}) AS prev_status,
    LAG(ob.priority) OVER (${order}) AS prev_priority,
    LAG(ob.assignee_id) OVER (${order}) AS prev_assignee_id,
    LAG(ob.team_id) OVER (${order}) AS prev_team_id
  FROM ${d.table('ticket_observations')} ob
),
starts AS (
  SELECT o.*,
    CASE
      WHEN prev_hash IS NULL AND updated_at = created_at THEN 'created'
      WHEN prev_hash IS NULL THEN 'first_seen'
      WHEN status IN ${DONE} AND prev_status NOT IN ${DONE} AND resolved_at > prev_updated_at AND resolved_at <= updated_at THEN 'resolved_at'
      WHEN updated_at <> prev_updated_at THEN 'updated_at'
      ELSE 'sweep'
    END AS precision_kind
  FROM o
  WHERE prev_hash IS NULL OR prev_hash <> state_hash
),
dated AS (
  SELECT s.*,
    CASE precision_kind
      WHEN 'created' THEN created_at
      WHEN 'first_seen' THEN updated_at
      WHEN 'resolved_at' THEN resolved_at
      WHEN 'updated_at' THEN updated_at
      ELSE GREATEST(observed_at, updated_at)
    END AS valid_from,
    CASE precision_kind
      WHEN 'resolved_at' THEN prev_updated_at
      WHEN 'updated_at' THEN prev_updated_at
      WHEN 'sweep' THEN prev_observed_at
    END AS changed_after
  FROM starts s
)
SELECT h.ticket_id, h.ticket_number, h.valid_from,
  LEAD(h.valid_from) OVER (PARTITION BY h.ticket_id ORDER BY h.updated_at, h.observed_at, h.state_hash) AS valid_to,
  h.precision_kind AS valid_from_precision, h.changed_after,
  h.status, h.priority, h.assignee_id, h.team_id, h.tags,
  CASE WHEN h.precision_kind NOT IN ('created', 'first_seen') THEN h.prev_status END AS previous_status,
  CASE WHEN h.precision_kind NOT IN ('created', 'first_seen') THEN h.prev_priority END AS previous_priority,
  CASE WHEN h.precision_kind NOT IN ('created', 'first_seen') THEN h.prev_assignee_id END AS previous_assignee_id,
  CASE WHEN h.precision_kind NOT IN ('created', 'first_seen') THEN h.prev_team_id END AS previous_team_id,
  COALESCE(h.status IN ${OPEN} AND h.prev_status IN ${DONE}, FALSE) AS is_reopen,
  COALESCE(h.status = 'resolved' AND h.prev_status <> 'resolved' AND h.precision_kind NOT IN ('created', 'first_seen'), FALSE) AS is_resolution,
  COALESCE(h.prev_assignee_id IS NOT NULL AND h.assignee_id IS NOT NULL AND h.assignee_id <> h.prev_assignee_id, FALSE) AS is_handoff,
  h.created_at, h.updated_at, h.observed_at
FROM dated h`;
};

const ticketHistory: ViewSpec = {
  name: 'ticket_history',
  description:
    "One row per ticket and interval in which its status, priority, assignee, team and tags held, from what the ticket sweep saw (`ticket_observations`): the API has no status history or events feed, and a reopen clears resolved_at, so the sweeps are the record. Granularity: the schedule's (a change and its undoing between two sweeps leave no trace), sharper where updated_at or resolved_at pins the moment (`valid_from_precision`). A ticket's history starts at its first sighting, marked `created` or `first_seen`.",
  columns: columns(
    'ticket_history',
    z.object({
      ticket_id: z.string(),
      ticket_number: z.number().int(),
      valid_from: Timestamp,
      valid_to: Timestamp,
      valid_from_precision: z.string(),
      changed_after: Timestamp,
      status: z.string(),
      priority: z.string(),
      assignee_id: z.string(),
      team_id: z.string(),
      tags: z.array(z.string()),
      previous_status: z.string(),
      previous_priority: z.string(),
      previous_assignee_id: z.string(),
      previous_team_id: z.string(),
      is_reopen: z.boolean(),
      is_resolution: z.boolean(),
      is_handoff: z.boolean(),
      created_at: Timestamp,
      updated_at: Timestamp,
      observed_at: Timestamp,
    }),
    {
      ticket_id: 'Ticket id (joins tickets.id).',
      ticket_number: 'Ticket number.',
      valid_from: 'When this state began, as well as the sweeps know it (see valid_from_precision).',
      valid_to: 'When the next state began; null for the state the sweep saw last (the current one).',
      valid_from_precision: `How valid_from is known: ${Object.entries(VALID_FROM_PRECISION)
        .map(([k, v]) => `\`${k}\` — ${v}`)
        .join('; ')}.`,
      changed_after:
        'The instant the previous state was last known to hold (previous sighting): the change happened after it. Null for a first sighting.',
      status: 'Status in the interval.',
      priority: 'Priority in the interval.',
      assignee_id: 'Assignee in the interval (joins agents.id); null when unassigned.',
      team_id: 'Team in the interval (joins teams.id).',
      tags: 'Tags in the interval (JSON array of strings, sorted).',
      previous_status: 'Status of the previous interval; null for a first sighting.',
      previous_priority: 'Priority of the previous interval; null for a first sighting.',
      previous_assignee_id:
        'Assignee of the previous interval; null for a first sighting or when unassigned.',
      previous_team_id: 'Team of the previous interval; null for a first sighting or when none.',
      is_reopen:
        'A reopen: resolved or closed before, open or need_more_info now — the event reopened_tickets counts (spec 2.11: "distinct tickets reopened in the period").',
      is_resolution:
        'A resolution: resolved now, not resolved before (the event resolved_tickets counts, spec 2.11: "tickets resolved in the period"); never on a first sighting (see the view ticket_resolutions for those).',
      is_handoff:
        'An assignee change from one agent to another (not from or to unassigned): a reassignment event.',
      created_at: 'When the ticket was created.',
      updated_at: "The ticket's updated_at at the sighting that began the interval.",
      observed_at: 'When the sync made that sighting.',
    },
  ),
  sql: ticketHistorySql,
};

/** The SQL of ticket_resolutions (inlined where another view builds on it: views never name views). */
const ticketResolutionsSql = (d: SqlDialect) =>
  `SELECT ticket_id, MIN(resolved_at) AS resolved_at, MIN(source) AS source FROM (
  SELECT h.ticket_id, h.valid_from AS resolved_at, 'history' AS source
  FROM (${ticketHistorySql(d).replace(/\n/g, '\n  ')}) h
  WHERE h.is_resolution
  UNION ALL
  SELECT t.id AS ticket_id, t.resolved_at, 'current' AS source
  FROM ${d.table('tickets')} t
  WHERE t.${d.ident('_deleted_at')} IS NULL AND t.status IN ${DONE} AND t.resolved_at IS NOT NULL
) r
GROUP BY ticket_id, resolved_at`;

// --- ticket_resolutions ---------------------------------------------------------------------------------

const ticketResolutions: ViewSpec = {
  name: 'ticket_resolutions',
  description:
    "Every resolution the warehouse knows, one row per ticket and instant: the moves to resolved in ticket_history, and each live ticket's current resolution (resolved_at while resolved or closed), which dates the resolution of a ticket first seen resolved. A resolution undone by a reopen before the ticket's history began is not known (the API has no events feed): on days before the first sync the count can be lower than the API's resolved_tickets.",
  columns: columns(
    'ticket_resolutions',
    z.object({ ticket_id: z.string(), resolved_at: Timestamp, source: z.string() }),
    {
      ticket_id: 'Ticket id (joins tickets.id).',
      resolved_at: 'When the ticket was resolved.',
      source:
        '`history` (a move to resolved between two sightings, dated by ticket_history.valid_from) or `current` (tickets.resolved_at of a ticket resolved or closed now).',
    },
  ),
  sql: (d) => ticketResolutionsSql(d),
};

// --- ticket_daily_backlog -------------------------------------------------------------------------------

const ticketDailyBacklog: ViewSpec = {
  name: 'ticket_daily_backlog',
  description:
    "Open tickets (open or need_more_info) at the end of each UTC day, from ticket_history: a ticket counts on a day when its interval holding at 24:00 UTC is open. Days before a ticket's history began (its first sighting) do not count it, so the early days of a warehouse undercount; backlog_now (spec 2.11: open, unresolved tickets now) is the last day's value only at the moment of the last sweep.",
  columns: columns(
    'ticket_daily_backlog',
    z.object({
      day: z.string(),
      open_tickets: z.number().int(),
      open_over_24h: z.number().int(),
      complete: z.boolean(),
    }),
    {
      day: 'The UTC day (YYYY-MM-DD); the count is at its end.',
      open_tickets: 'Tickets whose state at the end of the day was open or need_more_info.',
      open_over_24h:
        'Of those, tickets created more than 24 hours before the end of the day (backlog age counts from creation, spec 2.11 rule 2).',
      complete:
        "True for days that end after the warehouse's first sync (its first sighting): from then on every ticket's state is known at the end of the day; earlier days count only tickets whose history had begun.",
    },
  ),
  sql: (d) => `WITH h AS (
  SELECT hh.ticket_id, hh.status, hh.valid_from, hh.valid_to, hh.created_at, t.${d.ident('_deleted_at')} AS deleted_at
  FROM (${ticketHistorySql(d).replace(/\n/g, '\n  ')}) hh
  LEFT JOIN ${d.table('tickets')} t ON t.id = hh.ticket_id
),
days AS (
  ${d.daySeries('(SELECT MIN(valid_from) FROM h)', d.now)}
),
open_at_end AS (
  SELECT days.day_start, COUNT(*) AS open_tickets,
    SUM(CASE WHEN h.created_at < days.day_start THEN 1 ELSE 0 END) AS open_over_24h
  FROM days
  JOIN h ON h.status IN ${OPEN} AND h.valid_from < ${d.addDays('days.day_start', 1)}
    AND (h.valid_to IS NULL OR h.valid_to >= ${d.addDays('days.day_start', 1)})
    AND (h.deleted_at IS NULL OR h.deleted_at >= ${d.addDays('days.day_start', 1)})
  GROUP BY days.day_start
)
SELECT ${d.utcDay('days.day_start')} AS day, COALESCE(o.open_tickets, 0) AS open_tickets,
  COALESCE(o.open_over_24h, 0) AS open_over_24h,
  (${d.addDays('days.day_start', 1)} > (SELECT MIN(observed_at) FROM ${d.table('ticket_observations')})) AS complete
FROM days LEFT JOIN open_at_end o ON o.day_start = days.day_start`,
};

// --- agent_online_daily ---------------------------------------------------------------------------------

const agentOnlineDaily: ViewSpec = {
  name: 'agent_online_daily',
  description:
    'Online seconds per agent and UTC day from agent_sessions, as the report metric agent_online_time defines them (spec 2.11: "deduplicated, period-clipped online seconds"): each session clipped to the day, overlapping sessions of one agent merged so no second counts twice. A session without an end counts up to its last_activity (spec 2.8 rule 3 forbids inferring an end, so the time after it is not counted).',
  columns: columns(
    'agent_online_daily',
    z.object({
      agent_id: z.string(),
      day: z.string(),
      online_seconds: z.number(),
      sessions: z.number().int(),
    }),
    {
      agent_id: 'Agent id (joins agents.id).',
      day: 'The UTC day (YYYY-MM-DD).',
      online_seconds: 'Seconds the agent was online that day, overlaps counted once.',
      sessions: 'Sessions that overlap the day.',
    },
  ),
  sql: (d) => `WITH s AS (
  SELECT agent_id, session_start AS s_from, COALESCE(session_end, last_activity) AS s_to
  FROM ${d.table('agent_sessions')}
  WHERE COALESCE(session_end, last_activity) > session_start
),
days AS (
  ${d.daySeries('(SELECT MIN(s_from) FROM s)', '(SELECT MAX(s_to) FROM s)')}
),
clipped AS (
  SELECT s.agent_id, days.day_start,
    GREATEST(s.s_from, days.day_start) AS c_from,
    LEAST(s.s_to, ${d.addDays('days.day_start', 1)}) AS c_to
  FROM s JOIN days ON s.s_from < ${d.addDays('days.day_start', 1)} AND s.s_to > days.day_start
),
ordered AS (
  SELECT clipped.*, MAX(c_to) OVER (PARTITION BY agent_id, day_start ORDER BY c_from, c_to
    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM clipped
),
islands AS (
  SELECT ordered.*, SUM(CASE WHEN reach IS NULL OR c_from > reach THEN 1 ELSE 0 END)
    OVER (PARTITION BY agent_id, day_start ORDER BY c_from, c_to ROWS UNBOUNDED PRECEDING) AS island
  FROM ordered
),
merged AS (
  SELECT agent_id, day_start, island, MIN(c_from) AS m_from, MAX(c_to) AS m_to, COUNT(*) AS n
  FROM islands GROUP BY agent_id, day_start, island
)
SELECT agent_id, ${d.utcDay('day_start')} AS day, SUM(${d.secondsBetween('m_to', 'm_from')}) AS online_seconds,
  SUM(n) AS sessions
FROM merged GROUP BY agent_id, day_start`,
};

// --- ticket_metrics -------------------------------------------------------------------------------------

const NO_CALENDAR =
  'Null when no business-hours file is configured (SYNC_BUSINESS_HOURS unset: business_calendar has no live intervals).';

/**
 * The CTEs of ticket_metrics' business time (after `thread`): each ticket's reply span (first customer message
 * to first reply, or to now while unresolved and unanswered) and resolution span (creation to the current
 * resolution, or to now while open), and the seconds of each inside the live intervals of business_calendar —
 * the overlap of [from, to) with every interval, summed (the intervals are disjoint).
 */
const businessTimeSql = (d: SqlDialect) => {
  const overlap = (from: string, to: string) =>
    `CASE WHEN c.start_at < ${to} AND c.end_at > ${from}
      THEN ${d.secondsBetween(`LEAST(c.end_at, ${to})`, `GREATEST(c.start_at, ${from})`)} ELSE 0 END`;
  return `cal AS (
  SELECT start_at, end_at FROM ${d.table('business_calendar')} WHERE ${d.ident('_deleted_at')} IS NULL
),
calendar_state AS (
  SELECT COUNT(*) AS intervals FROM cal
),
targets AS (
  SELECT priority, first_reply_target_seconds, resolution_target_seconds
  FROM ${d.table('sla_targets')} WHERE ${d.ident('_deleted_at')} IS NULL
),
spans AS (
  SELECT t.id AS ticket_id, th.first_customer_at AS reply_from,
    COALESCE(th.first_reply_at, CASE WHEN t.status NOT IN ${DONE} THEN ${d.now} END) AS reply_to,
    t.created_at AS resolution_from,
    CASE WHEN t.status IN ${DONE} THEN t.resolved_at ELSE ${d.now} END AS resolution_to
  FROM ${d.table('tickets')} t LEFT JOIN thread th ON th.ticket_id = t.id
  WHERE t.${d.ident('_deleted_at')} IS NULL
),
business AS (
  SELECT s.ticket_id,
    SUM(${overlap('s.reply_from', 's.reply_to')}) AS reply_seconds,
    SUM(${overlap('s.resolution_from', 's.resolution_to')}) AS resolution_seconds
  FROM spans s
  JOIN cal c ON (c.start_at < s.reply_to AND c.end_at > s.reply_from)
    OR (c.start_at < s.resolution_to AND c.end_at > s.resolution_from)
  GROUP BY s.ticket_id
)`;
};

const ticketMetrics: ViewSpec = {
  name: 'ticket_metrics',
  description:
    "One row per current ticket with the metrics data teams model (the dbt_zendesk set, on this API's definitions): replies and waits from the public thread, first and final resolution, reopens, resolutions and handoffs from ticket_history, one-touch and two-touch resolutions, unsolved age, the last public message; first reply and resolution in business time with breach flags against the priority's targets (business_calendar and sla_targets, from SYNC_BUSINESS_HOURS; null without it). Thread metrics count public items only (the API's reads exclude internal notes and system events, spec 2.3). History metrics count what the sweeps saw since the ticket was first synced (history_complete says whether that is its whole life).",
  columns: columns(
    'ticket_metrics',
    z.object({
      ticket_id: z.string(),
      ticket_number: z.number().int(),
      created_at: Timestamp,
      status: z.string(),
      priority: z.string(),
      channel: z.string(),
      assignee_id: z.string(),
      team_id: z.string(),
      first_reply_seconds: z.number(),
      first_human_reply_seconds: z.number(),
      reply_count: z.number().int(),
      total_reply_seconds: z.number(),
      requester_wait_seconds: z.number(),
      awaiting_reply_since: Timestamp,
      first_resolved_at: Timestamp,
      first_resolution_seconds: z.number(),
      final_resolved_at: Timestamp,
      final_resolution_seconds: z.number(),
      resolutions: z.number().int(),
      reopens: z.number().int(),
      handoffs: z.number().int(),
      assignees: z.number().int(),
      is_one_touch: z.boolean(),
      is_two_touch: z.boolean(),
      unsolved_age_seconds: z.number(),
      last_public_message_at: Timestamp,
      last_public_message_role: z.string(),
      history_since: Timestamp,
      history_complete: z.boolean(),
      first_reply_business_seconds: z.number(),
      full_resolution_business_seconds: z.number(),
      first_reply_breached: z.boolean(),
      resolution_breached: z.boolean(),
    }),
    {
      ticket_id: 'Ticket id (joins tickets.id).',
      ticket_number: 'Ticket number.',
      created_at: 'When the ticket was created.',
      status: 'Current status.',
      priority: 'Current priority.',
      channel: 'Channel.',
      assignee_id: 'Current assignee (joins agents.id).',
      team_id: 'Current team (joins teams.id).',
      first_reply_seconds:
        'Seconds from the first customer message to the first public reply by an agent or AI at or after it (spec 2.11 customer_first_response_time: "seconds to a qualifying human or AI reply"); null when none yet.',
      first_human_reply_seconds:
        'The same to the first reply by a human agent (spec 2.11 human_first_response_time: "seconds to a human reply").',
      reply_count: 'Public replies by agents and AI.',
      total_reply_seconds:
        "Sum over the customer's turns that got a reply of the seconds from the turn's first message to the next public reply (a turn: consecutive customer messages).",
      requester_wait_seconds:
        'total_reply_seconds plus, while the ticket is open or need_more_info and the last customer turn has no reply, the seconds from that turn to now: how long the customer has waited in all.',
      awaiting_reply_since:
        "The first message of the customer's unanswered turn; null when every turn got a reply.",
      first_resolved_at:
        'The earliest resolution the warehouse knows (ticket_resolutions): a move to resolved in ticket_history, or the current resolved_at.',
      first_resolution_seconds: 'Seconds from creation to first_resolved_at.',
      final_resolved_at:
        'The current resolution (resolved_at while resolved or closed; spec 2.11 full_resolution_time dates by it); null while open.',
      final_resolution_seconds:
        'Seconds from creation to final_resolved_at (full_resolution_time, per ticket).',
      resolutions:
        'Resolutions the warehouse knows (rows of ticket_resolutions): spec 2.11 resolved_tickets counts tickets with one in a period.',
      reopens:
        'Reopens the sweeps saw (ticket_history.is_reopen; spec 2.11 reopened_tickets counts tickets with one in a period).',
      handoffs: 'Assignee changes from one agent to another the sweeps saw (ticket_history.is_handoff).',
      assignees: 'Distinct assignees the sweeps saw.',
      is_one_touch:
        'Resolved or closed now with exactly one public reply and no reopen seen (a first-contact resolution).',
      is_two_touch: 'Resolved or closed now with exactly two public replies and no reopen seen.',
      unsolved_age_seconds:
        'While open or need_more_info: seconds from creation to now (backlog age counts from creation, spec 2.11 rule 2); null otherwise.',
      last_public_message_at: 'The latest public thread item.',
      last_public_message_role: 'Who wrote it: customer, agent or ai.',
      history_since: "The start of the ticket's first interval in ticket_history.",
      history_complete:
        'True when the history starts at creation (the ticket was first synced before it changed): reopens, resolutions and handoffs cover its whole life.',
      first_reply_business_seconds: `first_reply_seconds in business time: the seconds of [first customer message, first reply) inside business_calendar's working intervals. ${NO_CALENDAR}`,
      full_resolution_business_seconds: `final_resolution_seconds in business time: the seconds of [created_at, final_resolved_at) inside business_calendar's working intervals; null while open. ${NO_CALENDAR}`,
      first_reply_breached: `True when the first reply took more business time than the priority's first_reply target (sla_targets); while the ticket is not resolved or closed and has no reply, when the business time from the first customer message to now already exceeds it. Null without a target for the priority, without a customer message, or for a ticket resolved without a reply. ${NO_CALENDAR}`,
      resolution_breached: `True when full_resolution_business_seconds exceeds the priority's resolution target (sla_targets); while open, when the business time from creation to now already exceeds it. Null without a target for the priority. ${NO_CALENDAR}`,
    },
  ),
  sql: (d) => `WITH m AS (
  SELECT m.ticket_id, m.role, m.created_at, m.id,
    LAG(m.role) OVER (PARTITION BY m.ticket_id ORDER BY m.created_at, m.id) AS prev_role,
    MIN(CASE WHEN m.role <> 'customer' THEN m.created_at END) OVER (PARTITION BY m.ticket_id ORDER BY m.created_at, m.id
      ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS next_reply_at
  FROM ${d.table('ticket_messages')} m
  WHERE m.${d.ident('_deleted_at')} IS NULL
),
first_customer AS (
  SELECT ticket_id, MIN(created_at) AS first_customer_at FROM m WHERE role = 'customer' GROUP BY ticket_id
),
thread AS (
  SELECT m.ticket_id,
    SUM(CASE WHEN m.role <> 'customer' THEN 1 ELSE 0 END) AS reply_count,
    MIN(CASE WHEN m.role <> 'customer' AND m.created_at >= f.first_customer_at THEN m.created_at END) AS first_reply_at,
    MIN(CASE WHEN m.role = 'agent' AND m.created_at >= f.first_customer_at THEN m.created_at END) AS first_human_reply_at,
    MIN(f.first_customer_at) AS first_customer_at,
    SUM(CASE WHEN m.role = 'customer' AND (m.prev_role IS NULL OR m.prev_role <> 'customer') AND m.next_reply_at IS NOT NULL
      THEN ${d.secondsBetween('m.next_reply_at', 'm.created_at')} END) AS total_reply_seconds,
    MIN(CASE WHEN m.role = 'customer' AND m.next_reply_at IS NULL THEN m.created_at END) AS awaiting_reply_since,
    MAX(m.created_at) AS last_public_message_at
  FROM m LEFT JOIN first_customer f ON f.ticket_id = m.ticket_id
  GROUP BY m.ticket_id
),
last_message AS (
  SELECT ticket_id, role, ROW_NUMBER() OVER (PARTITION BY ticket_id ORDER BY created_at DESC, id DESC) AS pick FROM m
),
h AS (
  ${ticketHistorySql(d).replace(/\n/g, '\n  ')}
),
history AS (
  SELECT ticket_id, MIN(valid_from) AS history_since,
    MAX(CASE WHEN valid_from_precision = 'created' THEN 1 ELSE 0 END) AS from_creation,
    SUM(CASE WHEN is_reopen THEN 1 ELSE 0 END) AS reopens,
    SUM(CASE WHEN is_handoff THEN 1 ELSE 0 END) AS handoffs,
    COUNT(DISTINCT assignee_id) AS assignees
  FROM h GROUP BY ticket_id
),
resolutions AS (
  SELECT ticket_id, MIN(resolved_at) AS first_resolved_at, COUNT(*) AS resolutions
  FROM (${ticketResolutionsSql(d).replace(/\n/g, '\n  ')}) tr GROUP BY ticket_id
),
${businessTimeSql(d)}
SELECT t.id AS ticket_id, t.ticket_number, t.created_at, t.status, t.priority, t.channel, t.assignee_id, t.team_id,
  ${d.secondsBetween('th.first_reply_at', 'th.first_customer_at')} AS first_reply_seconds,
  ${d.secondsBetween('th.first_human_reply_at', 'th.first_customer_at')} AS first_human_reply_seconds,
  COALESCE(th.reply_count, 0) AS reply_count,
  COALESCE(th.total_reply_seconds, 0) AS total_reply_seconds,
  COALESCE(th.total_reply_seconds, 0) + CASE WHEN t.status IN ${OPEN} AND th.awaiting_reply_since IS NOT NULL
    THEN ${d.secondsBetween(d.now, 'th.awaiting_reply_since')} ELSE 0 END AS requester_wait_seconds,
  th.awaiting_reply_since,
  r.first_resolved_at,
  ${d.secondsBetween('r.first_resolved_at', 't.created_at')} AS first_resolution_seconds,
  CASE WHEN t.status IN ${DONE} THEN t.resolved_at END AS final_resolved_at,
  CASE WHEN t.status IN ${DONE} THEN ${d.secondsBetween('t.resolved_at', 't.created_at')} END AS final_resolution_seconds,
  COALESCE(r.resolutions, 0) AS resolutions,
  COALESCE(hi.reopens, 0) AS reopens,
  COALESCE(hi.handoffs, 0) AS handoffs,
  COALESCE(hi.assignees, 0) AS assignees,
  (t.status IN ${DONE} AND COALESCE(th.reply_count, 0) = 1 AND COALESCE(hi.reopens, 0) = 0) AS is_one_touch,
  (t.status IN ${DONE} AND COALESCE(th.reply_count, 0) = 2 AND COALESCE(hi.reopens, 0) = 0) AS is_two_touch,
  CASE WHEN t.status IN ${OPEN} THEN ${d.secondsBetween(d.now, 't.created_at')} END AS unsolved_age_seconds,
  th.last_public_message_at,
  lm.role AS last_public_message_role,
  hi.history_since,
  COALESCE(hi.from_creation = 1, FALSE) AS history_complete,
  CASE WHEN cs.intervals > 0 AND th.first_reply_at IS NOT NULL THEN COALESCE(b.reply_seconds, 0) END
    AS first_reply_business_seconds,
  CASE WHEN cs.intervals > 0 AND t.status IN ${DONE} THEN COALESCE(b.resolution_seconds, 0) END
    AS full_resolution_business_seconds,
  CASE WHEN cs.intervals > 0 AND tg.first_reply_target_seconds IS NOT NULL AND th.first_customer_at IS NOT NULL
    AND (th.first_reply_at IS NOT NULL OR t.status NOT IN ${DONE})
    THEN COALESCE(b.reply_seconds, 0) > tg.first_reply_target_seconds END AS first_reply_breached,
  CASE WHEN cs.intervals > 0 AND tg.resolution_target_seconds IS NOT NULL
    THEN COALESCE(b.resolution_seconds, 0) > tg.resolution_target_seconds END AS resolution_breached
FROM ${d.table('tickets')} t
LEFT JOIN thread th ON th.ticket_id = t.id
LEFT JOIN last_message lm ON lm.ticket_id = t.id AND lm.pick = 1
LEFT JOIN history hi ON hi.ticket_id = t.id
LEFT JOIN resolutions r ON r.ticket_id = t.id
LEFT JOIN business b ON b.ticket_id = t.id
LEFT JOIN targets tg ON tg.priority = t.priority
CROSS JOIN calendar_state cs
WHERE t.${d.ident('_deleted_at')} IS NULL`,
};

// --- ticket_csat ----------------------------------------------------------------------------------------

const ticketCsat: ViewSpec = {
  name: 'ticket_csat',
  description:
    'CSAT per current ticket: its answered surveys in submission order, the first and the latest score, and how often the score changed from one answer to the next (csat_surveys not deleted, score and submitted_at set; spec 2.11 csat_average averages the same answers by submission day).',
  columns: columns(
    'ticket_csat',
    z.object({
      ticket_id: z.string(),
      responses: z.number().int(),
      first_score: z.number().int(),
      first_submitted_at: Timestamp,
      latest_score: z.number().int(),
      latest_submitted_at: Timestamp,
      score_changes: z.number().int(),
      average_score: z.number(),
    }),
    {
      ticket_id: 'Ticket id (joins tickets.id).',
      responses: 'Answered surveys (csat_responses counts them by submission day).',
      first_score: 'Score of the first answered survey.',
      first_submitted_at: 'When it was answered.',
      latest_score: 'Score of the latest answered survey.',
      latest_submitted_at: 'When it was answered.',
      score_changes: 'Answers whose score differs from the previous answer of the ticket.',
      average_score: 'Mean score of the answers.',
    },
  ),
  sql: (d) => `WITH s AS (
  SELECT s.ticket_id, s.score, s.submitted_at,
    LAG(s.score) OVER (PARTITION BY s.ticket_id ORDER BY s.submitted_at, s.id) AS prev_score,
    ROW_NUMBER() OVER (PARTITION BY s.ticket_id ORDER BY s.submitted_at, s.id) AS first_pick,
    ROW_NUMBER() OVER (PARTITION BY s.ticket_id ORDER BY s.submitted_at DESC, s.id DESC) AS last_pick
  FROM ${d.table('csat_surveys')} s
  WHERE s.${d.ident('_deleted_at')} IS NULL AND s.score IS NOT NULL AND s.submitted_at IS NOT NULL
    AND s.ticket_id IN (SELECT id FROM ${d.table('tickets')} WHERE ${d.ident('_deleted_at')} IS NULL)
)
SELECT ticket_id, COUNT(*) AS responses,
  MAX(CASE WHEN first_pick = 1 THEN score END) AS first_score,
  MAX(CASE WHEN first_pick = 1 THEN submitted_at END) AS first_submitted_at,
  MAX(CASE WHEN last_pick = 1 THEN score END) AS latest_score,
  MAX(CASE WHEN last_pick = 1 THEN submitted_at END) AS latest_submitted_at,
  SUM(CASE WHEN prev_score IS NOT NULL AND prev_score <> score THEN 1 ELSE 0 END) AS score_changes,
  AVG(CAST(score AS ${d.type('float')})) AS average_score
FROM s GROUP BY ticket_id`,
};

export const TICKET_HISTORY_VIEWS: readonly ViewSpec[] = [
  ticketHistory,
  ticketResolutions,
  ticketMetrics,
  ticketCsat,
  ticketDailyBacklog,
  agentOnlineDaily,
];

/** The history SQL for views that build on it (ticket_facts' reopen count). */
export { ticketHistorySql };
