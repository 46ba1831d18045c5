import { fileURLToPath } from 'node:url';
import type { Config } from '../../schemas/config.js';
import { CUSTOM_FIELDS_VIEW } from '../../schemas/custom-fields-view.js';
import { VIEW_NAMES } from '../../schemas/warehouse-views.js';
import type { RunSummary } from '../../worker/run-sync.js';

/** The saved report queries `npm start` snapshots on embedded defaults when REPORT_QUERIES is unset. */
export const EXAMPLE_REPORT_QUERIES = fileURLToPath(
  new URL('../../examples/report-queries.yaml', import.meta.url),
);

/** Where the tables live, as a BI user writes it: `support.` (PostgreSQL schema) or `<dataset>.` (BigQuery). */
function qualifier(config: Config): string {
  const bigquery = /^bigquery:\/\/[^/]+\/([A-Za-z0-9_]+)/.exec(config.DESTINATION_URL.reveal());
  return `${bigquery ? bigquery[1] : config.POSTGRES_SCHEMA}.`;
}

/** The end-of-run lines for BI users: report snapshot tables, the views, the reconciliation, schema changes. */
export function biSummaryLines(config: Config, summary: RunSummary): string[] {
  const q = qualifier(config);
  const queries = config.REPORT_QUERIES?.queries ?? [];
  const lines = [
    queries.length > 0
      ? `report snapshots: ${queries.length} saved queries (${config.REPORT_QUERIES!.path}) → ${q}report_snapshots, ${q}report_snapshot_values; daily series in ${q}report_daily_values`
      : 'report snapshots: none (set REPORT_QUERIES to a YAML list of saved report queries; see examples/report-queries.yaml)',
    `BI views: ${VIEW_NAMES.map((v) => `${q}${v}`).join(', ')} (docs/warehouse.md, "BI views")`,
  ];
  const r = summary.reconciliation;
  if (r?.error) lines.push(`reconciliation: could not run (${r.error}) — a warning, the run is not affected`);
  else if (r) {
    lines.push(
      `reconciliation: ${r.equal} equal, ${r.mismatch} mismatch${r.mismatch === 1 ? '' : 'es'}, ${r.skipped} skipped${r.moving ? `, ${r.moving} moving (the source changed while compared)` : ''}${r.explained ? `, ${r.explained} explained` : ''} → ${q}_reconciliation (npm run status)`,
    );
    for (const m of r.mismatches) lines.push(`  warning: ${m}`);
  }
  const drift = summary.schema_changes;
  if (drift) {
    const view =
      drift.customFieldColumns === null
        ? ''
        : `; ${q}${CUSTOM_FIELDS_VIEW} regenerated (${drift.customFieldColumns} field columns)`;
    lines.push(
      `schema changes: ${drift.recorded} first seen this run → ${q}_schema_changes (npm run status)${view}`,
    );
    for (const c of drift.changes) lines.push(`  ${c}`);
  }
  return lines;
}
