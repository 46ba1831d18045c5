import { MetricCatalogEntry } from '../schemas/api/reports.js';
import { defineStream } from './define.js';
import { referenceTable } from './reference.js';

/** The report metric catalog (spec 4.11): the whole catalog in one unpaginated answer. */
export const metricCatalog = defineStream({
  name: 'metric_catalog',
  kind: 'reference',
  table: 'metric_catalog',
  routeClass: 'list',
  endpoint: 'GET /reports/metrics',
  scope: 'analytics:read',
  // Spec 4.11 names no permission; the companion, like the report API, wants a linked agent.
  agent: { dashboardPermissions: [] },
  page: { item: MetricCatalogEntry },
  unpaginated: true,
  warehouse: referenceTable({
    description:
      'The report metric catalog (GET /reports/metrics). Latest sync wins when the content differs.',
    schema: MetricCatalogEntry,
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
  }),
});
