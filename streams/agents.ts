import { Agent, DIRECTORY_PAGE_LIMIT } from '../schemas/api/directory.js';
import { defineStream } from './define.js';
import { referenceTable } from './reference.js';

/** The workspace's agents, human and AI. */
export const agents = defineStream({
  name: 'agents',
  kind: 'reference',
  table: 'agents',
  routeClass: 'directory',
  endpoint: 'GET /agents',
  scope: 'agents:read',
  page: { item: Agent, maxLimit: DIRECTORY_PAGE_LIMIT.max },
  warehouse: referenceTable({
    description: 'Agents, human and AI (GET /agents). Latest sync wins when the content differs.',
    schema: Agent,
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
  }),
});
