import { agentSessions } from './agent-sessions.js';
import { agents } from './agents.js';
import { csatSurveys } from './csat-surveys.js';
import { metricCatalog } from './metric-catalog.js';
import { reportSnapshots } from './report-snapshots.js';
import { tags } from './tags.js';
import { teams } from './teams.js';
import { ticketMessages } from './ticket-messages.js';
import { tickets } from './tickets.js';
import { views } from './views.js';

/**
 * The streams of the sync, one definition each (streams/<name>.ts). Their order is the order streams are
 * listed and started in. Adding a stream of a kind that exists is its module plus its line here.
 */
export const STREAM_DEFINITIONS = [
  views,
  tags,
  teams,
  agents,
  metricCatalog,
  tickets,
  ticketMessages,
  csatSurveys,
  agentSessions,
  reportSnapshots,
] as const;
