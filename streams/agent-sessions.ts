import { AgentSession, AgentSessionMeta } from '../schemas/api/exports.js';
import { defineStream } from './define.js';

/** Agent login sessions: an export read in windows of `session_start` (spec 4.14). */
export const agentSessions = defineStream({
  name: 'agent_sessions',
  kind: 'export',
  table: 'agent_sessions',
  routeClass: 'analytics',
  endpoint: 'GET /agent-sessions',
  scope: 'analytics:read',
  agent: { dashboardPermissions: ['dashboard.org_metrics', 'dashboard.other_agents_metrics'] },
  passes: ['agent_sessions'],
  passDefinitions: {
    agent_sessions: {
      page: { item: AgentSession, meta: AgentSessionMeta },
      // Agents log in every working day, tickets or not.
      forecast: { dateColumn: 'session_start', basis: 'days' },
    },
  },
  warehouse: {
    description:
      'One row per agent login session (GET /agent-sessions). Open sessions change until they end; version: updated_at.',
    schema: AgentSession,
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
  },
  // The export windows are cut by it.
  freshness: 'session_start',
  freshnessTarget: { warnHours: 6, errorHours: 24 },
  audit: { unit: 'window', seedColumn: 'session_start', pass: 'agent_sessions', streams: ['agent_sessions'] },
});
