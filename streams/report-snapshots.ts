import { defineStream } from './define.js';

/**
 * Snapshots of the saved report queries (REPORT_QUERIES), one each per run. Their tables hold query results,
 * not API items: schemas/warehouse/report-snapshots.ts builds them.
 */
export const reportSnapshots = defineStream({
  name: 'report_snapshots',
  kind: 'report',
  table: 'report_snapshots',
  routeClass: 'analytics',
  endpoint: 'POST /reports/query',
  scope: 'analytics:read',
  // Spec 4.12: the agent's dashboard permissions apply; every report needs at least this one (a query's
  // metrics and breakdowns may need more).
  agent: { dashboardPermissions: ['dashboard.org_metrics'] },
  warehouse: null,
});
