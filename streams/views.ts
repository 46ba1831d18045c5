import { View } from '../schemas/api/views.js';
import { defineStream } from './define.js';
import { referenceTable } from './reference.js';

/** Saved inbox views with their ticket counts (spec 4.9). */
export const views = defineStream({
  name: 'views',
  kind: 'reference',
  table: 'views',
  routeClass: 'list',
  endpoint: 'GET /views',
  scope: 'tickets:read',
  page: { item: View },
  warehouse: referenceTable({
    description:
      'Saved inbox views with their ticket counts (GET /views). No source version: the latest sync wins when the content (e.g. count) differs.',
    schema: View,
    descriptions: {
      id: 'View id (UUID). Primary key.',
      name: 'View name.',
      count: 'Number of tickets in the view when synced.',
      filters: 'Filters (JSON array of {condition, operator, options}).',
      shared: 'Shared with the whole workspace.',
    },
  }),
});
