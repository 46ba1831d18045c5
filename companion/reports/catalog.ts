import type { ServedMetricCatalogEntry } from '../../schemas/api/reports.js';

/**
 * The static metric catalog of spec 2.9/2.11: 50 entries. The 11 metrics of the definitions table and the 13
 * further named ids follow the spec; the remaining 26 (`OUR_ROWS` below, marked in companion/README.md) are
 * our own design. No tickets, customer data, workspace ids or internal source names appear here.
 */

/** Which family a metric belongs to; drives the support rules of spec 4.12 (rules 4–6). */
export type MetricFamily = 'ticket' | 'csat' | 'automation' | 'presence' | 'commerce';

export interface MetricDef extends ServedMetricCatalogEntry {
  family: MetricFamily;
  /** True for the 26 metrics whose definitions are our own choice. */
  ours: boolean;
}

type Row = readonly [
  id: string,
  group: MetricDef['group'],
  family: MetricFamily,
  format: MetricDef['format'],
  aggregation: MetricDef['aggregation'],
  attribution: MetricDef['attribution'],
  higherIsBetter: boolean,
  label: string,
  description: string,
  denominator?: string,
];
const HIGHER = true;
const LOWER = false;

const SLA_FIRST =
  'Targets by priority: urgent 1 h, high 4 h, medium 8 h, low and none 24 h, measured from the first customer message.';
const SLA_RESOLUTION =
  'Targets by priority: urgent 8 h, high 24 h, medium 72 h, low and none 120 h, measured from creation.';

/*
 * The catalog as two tables, one row per metric in the order the API serves them: id, group, family, format,
 * aggregation, attribution, and whether a higher value is better; on the next line the label and description;
 * a metric with a denominator (ratios, averages) names it on a third line.
 */
// biome-ignore format: a table reads by its aligned columns
const SPEC_ROWS: readonly Row[] = [
  // ---- the definitions table of spec 2.11
  ['new_tickets',                   'volume',         'ticket',     'count',            'count',   'ticket_created',     LOWER,
    'New tickets', 'Tickets created in the period.'],
  ['resolved_tickets',              'resolution',     'ticket',     'count',            'count',   'ticket_resolved',    HIGHER,
    'Resolved tickets', 'Distinct tickets moved to resolved in the period.'],
  ['tickets_replied_to',            'responsiveness', 'ticket',     'count',            'count',   'reply_event',        HIGHER,
    'Tickets replied to', 'Distinct tickets with a tracked public support reply (human, AI or business send) in the period.'],
  ['answered_tickets',              'responsiveness', 'ticket',     'count',            'count',   'reply_event',        HIGHER,
    'Answered tickets', 'Distinct tickets with a public human or AI message attributed to an agent in the period.'],
  ['reopened_tickets',              'quality',        'ticket',     'count',            'count',   'reopen_event',       LOWER,
    'Reopened tickets', 'Distinct tickets reopened in the period (not the number of reopen events).'],
  ['backlog_now',                   'backlog',        'ticket',     'count',            'count',   'current_snapshot',   LOWER,
    'Backlog', 'Open, unresolved tickets now (status open or need_more_info).'],
  ['backlog_over_24h',              'backlog',        'ticket',     'count',            'count',   'current_snapshot',   LOWER,
    'Backlog older than 24 hours', 'Open tickets created more than 24 hours ago.'],
  ['backlog_over_48h',              'backlog',        'ticket',     'count',            'count',   'current_snapshot',   LOWER,
    'Backlog older than 48 hours', 'Open tickets created more than 48 hours ago.'],
  ['awaiting_response_now',         'backlog',        'ticket',     'count',            'count',   'current_snapshot',   LOWER,
    'Awaiting customer', 'Open tickets waiting for information from the customer (status need_more_info) now.'],
  ['net_backlog_change',            'backlog',        'ticket',     'count',            'sum',     'mixed_events',       LOWER,
    'Net backlog change', 'New tickets minus resolved tickets in the period.',
    'new_tickets minus resolved_tickets over the same period and filters'],
  ['messages',                      'volume',         'ticket',     'count',            'sum',     'ticket_created',     LOWER,
    'Messages', 'Public customer, human and AI messages on tickets created in the period.'],
  // ---- further named ids of spec 2.11
  ['messages_per_ticket',           'volume',         'ticket',     'decimal',          'average', 'ticket_created',     LOWER,
    'Messages per ticket', 'Public customer, human and AI messages per ticket, on tickets created in the period.',
    'tickets created in the period'],
  ['agent_messages',                'responsiveness', 'ticket',     'count',            'count',   'reply_event',        HIGHER,
    'Agent messages', 'Public messages written by human agents in the period.'],
  ['customer_first_response_time',  'responsiveness', 'ticket',     'duration-seconds', 'median',  'reply_event',        LOWER,
    'First response time', 'Median seconds from the first customer message to the first public human or AI reply, dated by that reply.'],
  ['human_first_response_time',     'responsiveness', 'ticket',     'duration-seconds', 'median',  'reply_event',        LOWER,
    'Human first response time', 'Median seconds from the first customer message to the first public human reply, dated by that reply.'],
  ['full_resolution_time',          'resolution',     'ticket',     'duration-seconds', 'median',  'ticket_resolved',    LOWER,
    'Full resolution time', 'Median seconds from creation to the final resolution, for tickets whose final resolution falls in the period.'],
  ['csat_average',                  'satisfaction',   'csat',       'decimal',          'average', 'survey_submitted',   HIGHER,
    'CSAT score', 'Average score (1 to 5) of scored surveys submitted in the period.'],
  ['csat_responses',                'satisfaction',   'csat',       'count',            'count',   'survey_submitted',   HIGHER,
    'CSAT responses', 'Scored surveys submitted in the period.'],
  ['low_csat_tickets',              'satisfaction',   'csat',       'count',            'count',   'survey_submitted',   LOWER,
    'Low CSAT tickets', 'Distinct tickets with a survey scored 1 or 2 submitted in the period.'],
  ['csat_response_rate',            'satisfaction',   'csat',       'percent',          'ratio',   'survey_submitted',   HIGHER,
    'CSAT response rate', 'Scored submissions divided by surveys sent in the period, dated by the sent date.',
    'surveys sent in the period (by sent date); numerator: those with a scored submission'],
  ['time_saved',                    'automation',     'automation', 'duration-seconds', 'sum',     'action_executed',    HIGHER,
    'Time saved', 'Estimated agent seconds saved by executed automation actions, from workspace action-time assumptions.'],
  ['money_saved',                   'automation',     'automation', 'currency-eur',     'sum',     'action_executed',    HIGHER,
    'Money saved', 'Time saved valued at the workspace hourly-rate assumption, in EUR; an estimate.'],
  ['ai_spend',                      'automation',     'automation', 'currency-eur',     'sum',     'action_executed',    LOWER,
    'AI spend', 'Recorded AI credits converted at the fallback EUR-per-credit rate, dated by AI run creation even without a tracked action; not an invoice.'],
  ['agent_online_time',             'presence',       'presence',   'duration-seconds', 'sum',     'agent_presence',     HIGHER,
    'Agent online time', 'Online seconds from recorded login sessions, overlapping sessions of one agent deduplicated and clipped to the period; open sessions count up to their last activity.'],
];

// biome-ignore format: a table reads by its aligned columns
const OUR_ROWS: readonly Row[] = [
  ['email_tickets',                 'volume',         'ticket',     'count',            'count',   'ticket_created',     LOWER,
    'Email tickets', 'Tickets created on the email channel in the period.'],
  ['chat_tickets',                  'volume',         'ticket',     'count',            'count',   'ticket_created',     LOWER,
    'Chat tickets', 'Tickets created on the website chat widget in the period.'],
  ['social_messaging_tickets',      'volume',         'ticket',     'count',            'count',   'ticket_created',     LOWER,
    'Messaging and social tickets', 'Tickets created on WhatsApp, Instagram, Facebook, TikTok or YouTube in the period.'],
  ['voice_tickets',                 'volume',         'ticket',     'count',            'count',   'ticket_created',     LOWER,
    'Voice tickets', 'Tickets created from phone calls in the period.'],
  ['contact_form_tickets',          'volume',         'ticket',     'count',            'count',   'ticket_created',     LOWER,
    'Contact form tickets', 'Tickets created from the contact form in the period.'],
  ['customer_messages',             'volume',         'ticket',     'count',            'sum',     'ticket_created',     LOWER,
    'Customer messages', 'Public customer messages on tickets created in the period.'],
  ['average_first_response_time',   'responsiveness', 'ticket',     'duration-seconds', 'average', 'reply_event',        LOWER,
    'Average first response time', 'Arithmetic mean of seconds from the first customer message to the first public human or AI reply, dated by that reply.'],
  ['ai_answered_tickets',           'responsiveness', 'ticket',     'count',            'count',   'reply_event',        HIGHER,
    'AI-answered tickets', 'Distinct tickets with a public AI reply in the period.'],
  ['sla_first_response_breaches',   'sla',            'ticket',     'count',            'count',   'ticket_created',     LOWER,
    'First response SLA breaches', `Tickets created in the period whose first human or AI reply came after the target, or that are still unanswered past it. ${SLA_FIRST}`],
  ['sla_first_response_compliance', 'sla',            'ticket',     'percent',          'ratio',   'ticket_created',     HIGHER,
    'First response SLA compliance', `Share of tickets created in the period whose first reply met the target. ${SLA_FIRST}`,
    'tickets created in the period with a known outcome: replied, or unanswered and already past the target'],
  ['sla_resolution_breaches',       'sla',            'ticket',     'count',            'count',   'ticket_resolved',    LOWER,
    'Resolution SLA breaches', `Tickets whose final resolution falls in the period and took longer than the target. ${SLA_RESOLUTION}`],
  ['first_contact_resolution_rate', 'resolution',     'ticket',     'percent',          'ratio',   'ticket_resolved',    HIGHER,
    'First contact resolution rate', 'Share of tickets finally resolved in the period that were resolved with exactly one public human or AI reply and never reopened.',
    'tickets whose final resolution falls in the period'],
  ['average_resolution_time',       'resolution',     'ticket',     'duration-seconds', 'average', 'ticket_resolved',    LOWER,
    'Average resolution time', 'Arithmetic mean of seconds from creation to the final resolution, dated by that resolution.'],
  ['replies_per_resolved_ticket',   'resolution',     'ticket',     'decimal',          'average', 'ticket_resolved',    LOWER,
    'Replies per resolved ticket', 'Average number of public human and AI replies on tickets finally resolved in the period.',
    'tickets whose final resolution falls in the period'],
  ['ai_resolved_tickets',           'resolution',     'ticket',     'count',            'count',   'ticket_resolved',    HIGHER,
    'AI-resolved tickets', 'Distinct tickets moved to resolved by an AI agent in the period.'],
  ['ai_resolution_rate',            'resolution',     'ticket',     'percent',          'ratio',   'ticket_resolved',    HIGHER,
    'AI resolution rate', 'Share of resolutions in the period made by an AI agent.',
    'resolution events in the period'],
  ['reopen_events',                 'quality',        'ticket',     'count',            'count',   'reopen_event',       LOWER,
    'Reopens', 'Reopen events in the period (a ticket reopened twice counts twice).'],
  ['reopen_rate',                   'quality',        'ticket',     'percent',          'ratio',   'ticket_resolved',    LOWER,
    'Reopen rate', 'Share of resolutions in the period that were followed by a reopen of the same ticket.',
    'resolution events in the period'],
  ['reassigned_tickets',            'routing',        'ticket',     'count',            'count',   'reassignment_event', LOWER,
    'Reassigned tickets', 'Distinct tickets moved from one agent to another in the period (first assignment excluded).'],
  ['reassignments',                 'routing',        'ticket',     'count',            'count',   'reassignment_event', LOWER,
    'Reassignments', 'Assignee changes from one agent to another in the period (each change counts).'],
  ['team_transfers',                'routing',        'ticket',     'count',            'count',   'reassignment_event', LOWER,
    'Team transfers', 'Distinct tickets moved from one team to another in the period.'],
  ['csat_positive_rate',            'satisfaction',   'csat',       'percent',          'ratio',   'survey_submitted',   HIGHER,
    'Positive CSAT rate', 'Share of scored surveys submitted in the period with a score of 4 or 5.',
    'scored surveys submitted in the period'],
  ['automation_actions',            'automation',     'automation', 'count',            'count',   'action_executed',    HIGHER,
    'Automation actions', 'Executed automation actions in the period.'],
  ['ai_credits_used',               'automation',     'automation', 'decimal',          'sum',     'action_executed',    LOWER,
    'AI credits used', 'Recorded AI credits, dated by AI run creation, including runs without a tracked action.'],
  ['unassigned_now',                'backlog',        'ticket',     'count',            'count',   'current_snapshot',   LOWER,
    'Unassigned backlog', 'Open tickets (open or need_more_info) with no assignee now.'],
  ['order_revenue',                 'commerce',       'commerce',   'currency-eur',     'sum',     'order_paid',         HIGHER,
    'Revenue after support', 'EUR amount of orders paid in the period after a resolved support conversation.'],
];

function metricDef(row: Row, ours: boolean): MetricDef {
  const [
    id,
    group,
    family,
    format,
    aggregation,
    attribution,
    higherIsBetter,
    label,
    description,
    denominator,
  ] = row;
  // Snapshot metrics (spec 2.11 rule 2) are exactly those read from the current snapshot.
  const snapshot = attribution === 'current_snapshot';
  // The keys keep the order the catalog has always been served in: a snapshot metric names `snapshot` early.
  return {
    id,
    label,
    description,
    group,
    family,
    format,
    aggregation,
    attribution,
    ...(snapshot ? { snapshot } : {}),
    ...(denominator !== undefined ? { denominator } : {}),
    higherIsBetter,
    dataType: format === 'count' ? 'integer' : 'number',
    snapshot,
    ours,
  };
}

export const METRICS: readonly MetricDef[] = [
  ...SPEC_ROWS.map((row) => metricDef(row, false)),
  // ---- our own 26
  ...OUR_ROWS.map((row) => metricDef(row, true)),
];

export const METRIC_BY_ID: ReadonlyMap<string, MetricDef> = new Map(METRICS.map((m) => [m.id, m]));

/** The catalog as the API serves it (spec 4.11): the entry fields of 2.9 only. */
export function catalogEntries(): ServedMetricCatalogEntry[] {
  return METRICS.map(({ family: _f, ours: _o, ...entry }) => entry);
}
