import type { z } from 'zod';
import * as api from '../api/index.js';
import { businessCalendarTable, slaTargetsTable } from './business-calendar.js';
import { column } from './derive.js';
import { reportSnapshots, reportSnapshotValuesTable } from './report-snapshots.js';
import type { TableName } from './table-names.js';
import { type ApiTableDef, apiTable, type TableSpec } from './table-spec.js';
import { ticketObservationsTable } from './ticket-observations.js';

/**
 * The table catalog: the spec of every data table (its key, merge rule, column descriptions and layout),
 * derived from the API's zod schemas, and the input type each table accepts. Every table and column is
 * documented in docs/warehouse.md, generated from here.
 */

// --- tickets -------------------------------------------------------------------------------------------

const tickets = apiTable({
  name: 'tickets',
  description:
    'One row per ticket (GET /tickets with include=ticket_fields). Version: updated_at. Tickets gone from the source are marked with _deleted_at by a full refresh.',
  schema: api.Ticket,
  primaryKey: ['id'],
  merge: { kind: 'version', column: 'updated_at' },
  tracksDeletion: true,
  derive: {
    flatten: ['contact'],
    descriptions: {
      id: 'Ticket id (UUID). Primary key.',
      ticket_number: 'Human-facing ticket number (used in API paths).',
      subject: 'Subject line; null when the ticket has none.',
      status: 'Lifecycle status.',
      priority: 'Priority.',
      channel: 'Channel the ticket came in through.',
      created_at: 'When the ticket was created.',
      updated_at: 'When the ticket last changed (the version of the row).',
      tags: 'Tag names on the ticket (JSON array of strings).',
      contact_id: 'Contact id (UUID); null when the ticket has no contact.',
      contact_email: 'Contact e-mail address.',
      contact_first_name: 'Contact first name.',
      contact_last_name: 'Contact last name.',
      contact_phone: 'Contact phone number.',
      ticket_type: 'Regular ticket or side conversation.',
      parent_ticket_id: 'Parent ticket id for side conversations.',
      assignee_id: 'Assigned agent id (joins agents.id); null when unassigned.',
      team_id: 'Assigned team id (joins teams.id).',
      language: 'Detected or set language.',
      is_spam: 'Marked as spam.',
      resolved_at: 'When the ticket was last resolved.',
      ticket_fields:
        'Custom field values (JSON array of {field_id, name, type, value}); null when not requested.',
    },
  },
  indexes: [['created_at'], ['updated_at'], ['ticket_number'], ['assignee_id'], ['team_id'], ['status']],
  partitionBy: 'created_at',
  clusterBy: ['status', 'assignee_id', 'team_id', 'ticket_number'],
});

// --- ticket_messages -----------------------------------------------------------------------------------

const ticketMessages = apiTable({
  name: 'ticket_messages',
  description:
    'One row per thread item of a ticket (GET /tickets/:ticketNumber/messages). No source version: the latest sync wins when the content differs (delivery status changes over time). A full refresh re-reads every thread and sets _deleted_at on messages no longer served (e.g. of deleted tickets).',
  schema: api.Message,
  primaryKey: ['id'],
  merge: { kind: 'content' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'Message id (UUID). Primary key.',
      ticket_id: 'Ticket id (joins tickets.id).',
      ticket_number: 'Ticket number (joins tickets.ticket_number).',
      role: 'Who wrote it: customer, agent or ai.',
      direction: 'inbound or outbound.',
      text: 'Plain-text body.',
      channel: 'Channel of the message.',
      author_name: 'Display name of the author.',
      status: 'Delivery status (queued, sent, delivered, failed or a later value). Can change.',
      created_at: 'When the message was created.',
      attachments: 'Attachments (JSON array of {id, file_name, mime_type, size, public_url}).',
    },
  },
  indexes: [['ticket_id', 'created_at'], ['ticket_number'], ['created_at']],
  partitionBy: 'created_at',
  clusterBy: ['ticket_id', 'role'],
});

// --- csat_surveys --------------------------------------------------------------------------------------

const csatVersion = (s: { submitted_at: string | null; sent_at: string }) => s.submitted_at ?? s.sent_at;

const csatSurveys = apiTable({
  name: 'csat_surveys',
  description:
    'One row per CSAT survey (GET /csat-surveys). Surveys are answered late; version: _version = coalesce(submitted_at, sent_at), which only grows (a survey is sent before it is answered). A full refresh re-reads every survey sent since the start date and marks those the export no longer serves (e.g. of deleted tickets, spec 2.7 rule 7) with _deleted_at.',
  schema: api.CsatSurvey,
  primaryKey: ['id'],
  merge: { kind: 'version', column: '_version' },
  tracksDeletion: true,
  derive: {
    descriptions: {
      id: 'Survey id (UUID). Primary key.',
      ticket_id: 'Ticket id (joins tickets.id).',
      ticket_number: 'Ticket number; null when unknown.',
      credited_agent_id: 'Agent credited with the survey (joins agents.id); null when unattributed.',
      credited_agent_name: 'Name of the credited agent at survey time.',
      attribution_source: 'How the agent was attributed.',
      score: 'Score 1–5; null until answered.',
      sent_at: 'When the survey was sent.',
      submitted_at: 'When the survey was answered; null until then.',
      comment: 'Free-text comment (only when the sync requests comments).',
    },
  },
  computed: [
    {
      ...column(
        '_version',
        'timestamp',
        false,
        'Row version: coalesce(submitted_at, sent_at). A later answer replaces the unanswered row.',
      ),
      compute: csatVersion,
    },
  ],
  indexes: [['sent_at'], ['submitted_at'], ['credited_agent_id'], ['ticket_id']],
  partitionBy: 'sent_at',
  clusterBy: ['credited_agent_id', 'score'],
});

// --- agent_sessions ------------------------------------------------------------------------------------

const agentSessions = apiTable({
  name: 'agent_sessions',
  description:
    'One row per agent login session (GET /agent-sessions). Open sessions change until they end; version: updated_at.',
  schema: api.AgentSession,
  primaryKey: ['id'],
  merge: { kind: 'version', column: 'updated_at' },
  tracksDeletion: false,
  derive: {
    descriptions: {
      id: 'Session id (UUID). Primary key.',
      agent_id: 'Agent id (joins agents.id).',
      session_start: 'When the session started.',
      session_end: 'When the session ended; null while open.',
      last_activity: 'Last activity seen in the session.',
      updated_at: 'When the record last changed (the version of the row).',
    },
  },
  indexes: [['agent_id', 'session_start'], ['session_start'], ['updated_at']],
  partitionBy: 'session_start',
  clusterBy: ['agent_id'],
});

// --- reference tables ----------------------------------------------------------------------------------

/**
 * A reference table: a small list the sync reads whole on every run. The source gives no version, so the
 * latest read wins when the content differs, and a full refresh marks what the source stopped serving.
 */
function referenceTable<T extends z.ZodObject>(
  def: Pick<ApiTableDef<T>, 'name' | 'description' | 'schema'> & {
    readonly descriptions: Readonly<Record<string, string>>;
    readonly indexes?: ApiTableDef<T>['indexes'];
    readonly clusterBy?: ApiTableDef<T>['clusterBy'];
  },
) {
  return apiTable({
    name: def.name,
    description: def.description,
    schema: def.schema,
    primaryKey: ['id'],
    merge: { kind: 'content' },
    tracksDeletion: true,
    derive: { descriptions: def.descriptions },
    indexes: def.indexes ?? [],
    partitionBy: null,
    clusterBy: def.clusterBy ?? [],
  });
}

const views = referenceTable({
  name: 'views',
  description:
    'Saved inbox views with their ticket counts (GET /views). No source version: the latest sync wins when the content (e.g. count) differs.',
  schema: api.View,
  descriptions: {
    id: 'View id (UUID). Primary key.',
    name: 'View name.',
    count: 'Number of tickets in the view when synced.',
    filters: 'Filters (JSON array of {condition, operator, options}).',
    shared: 'Shared with the whole workspace.',
  },
});

const tags = referenceTable({
  name: 'tags',
  description: 'Tags of the workspace (GET /tags). Latest sync wins when the content differs.',
  schema: api.Tag,
  descriptions: {
    id: 'Tag id. Primary key.',
    name: 'Tag name (as used in tickets.tags).',
    created_at: 'When the tag was created.',
  },
  indexes: [['name']],
  clusterBy: ['name'],
});

const teams = referenceTable({
  name: 'teams',
  description: 'Teams (GET /teams). Latest sync wins when the content differs.',
  schema: api.Team,
  descriptions: {
    id: 'Team id. Primary key.',
    name: 'Team name.',
    agent_ids: 'Member agent ids (JSON array of strings).',
    created_at: 'When the team was created.',
  },
});

const agents = referenceTable({
  name: 'agents',
  description: 'Agents, human and AI (GET /agents). Latest sync wins when the content differs.',
  schema: api.Agent,
  descriptions: {
    id: 'Agent id. Primary key.',
    name: 'Agent name.',
    email: 'E-mail address; null for AI agents.',
    kind: 'human or ai.',
    active: 'Whether the agent is active.',
    team_ids: 'Team ids (JSON array of strings).',
    created_at: 'When the agent was created.',
  },
  indexes: [['email']],
});

const metricCatalog = referenceTable({
  name: 'metric_catalog',
  description: 'The report metric catalog (GET /reports/metrics). Latest sync wins when the content differs.',
  schema: api.MetricCatalogEntry,
  descriptions: {
    id: 'Metric id, e.g. tickets_created. Primary key.',
    label: 'Display label.',
    description: 'What the metric measures.',
    group: 'Catalog group.',
    dataType: 'integer or number.',
    format: 'Display format.',
    aggregation: 'How values aggregate.',
    attribution: 'Which event the metric is attributed to.',
    denominator: 'Denominator metric id for ratios.',
    snapshot: 'Whether the metric is a current snapshot rather than an event count.',
    higherIsBetter: 'Whether a higher value is better.',
  },
});

/** Every data table's spec by name (the report tables come from report-snapshots.ts). */
const SPECS = {
  tickets,
  ticket_messages: ticketMessages,
  csat_surveys: csatSurveys,
  agent_sessions: agentSessions,
  views,
  tags,
  teams,
  agents,
  metric_catalog: metricCatalog,
  report_snapshots: reportSnapshots,
  report_snapshot_values: reportSnapshotValuesTable,
  ticket_observations: ticketObservationsTable,
  business_calendar: businessCalendarTable,
  sla_targets: slaTargetsTable,
} satisfies Record<TableName, TableSpec<unknown>>;

/** The input type `writeBatch` accepts for each table: what its spec's `toRow` takes. */
export type RowInputs = {
  [T in TableName]: (typeof SPECS)[T] extends TableSpec<infer Input> ? Input : never;
};
export type WarehouseRowInput<T extends TableName = TableName> = RowInputs[T];

export const TABLES: { readonly [T in TableName]: TableSpec<RowInputs[T]> } = SPECS;
export function tableSpecOf<T extends TableName>(name: T): TableSpec<RowInputs[T]> {
  const spec = TABLES[name];
  if (!spec) throw new Error(`warehouse: unknown table ${String(name)}`);
  return spec;
}
