import { DIRECTORY_PAGE_LIMIT, Team } from '../schemas/api/directory.js';
import { defineStream } from './define.js';
import { referenceTable } from './reference.js';

/** The workspace's teams. */
export const teams = defineStream({
  name: 'teams',
  kind: 'reference',
  table: 'teams',
  routeClass: 'directory',
  endpoint: 'GET /teams',
  scope: 'teams:read',
  page: { item: Team, maxLimit: DIRECTORY_PAGE_LIMIT.max },
  warehouse: referenceTable({
    description: 'Teams (GET /teams). Latest sync wins when the content differs.',
    schema: Team,
    descriptions: {
      id: 'Team id. Primary key.',
      name: 'Team name.',
      agent_ids: 'Member agent ids (JSON array of strings).',
      created_at: 'When the team was created.',
    },
  }),
});
