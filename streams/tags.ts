import { DIRECTORY_PAGE_LIMIT, Tag } from '../schemas/api/directory.js';
import { defineStream } from './define.js';
import { referenceTable } from './reference.js';

/** The workspace's tags. */
export const tags = defineStream({
  name: 'tags',
  kind: 'reference',
  table: 'tags',
  routeClass: 'directory',
  endpoint: 'GET /tags',
  scope: 'tags:read',
  page: { item: Tag, maxLimit: DIRECTORY_PAGE_LIMIT.max },
  warehouse: referenceTable({
    description: 'Tags of the workspace (GET /tags). Latest sync wins when the content differs.',
    schema: Tag,
    descriptions: {
      id: 'Tag id. Primary key.',
      name: 'Tag name (as used in tickets.tags).',
      created_at: 'When the tag was created.',
    },
    indexes: [['name']],
    clusterBy: ['name'],
  }),
});
