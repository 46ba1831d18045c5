import type { ReportSnapshotsInput } from '../schemas/child-inputs.js';
import type { StreamCounts } from '../schemas/run-summary.js';
import { analyticsActivities } from './activity-proxies.js';
import { trackChildProgress } from './progress.js';
import { recordedWindow } from './window-ledger.js';

/**
 * The report snapshots of one run: every saved query (REPORT_QUERIES) is run once, taken at `takenAt`,
 * one analytics-class activity per query on the analytics task queue (whose rate Temporal enforces). Each
 * snapshot is written with its values and the query's checkpoint in one transaction. Queries run one
 * after the other; the first one the API rejects fails the stream (the others already taken stay).
 */
async function reportSnapshotsWorkflowBody(input: ReportSnapshotsInput): Promise<StreamCounts> {
  const progress = trackChildProgress(`${input.queries.length} queries at ${input.takenAt}`);
  const analytics = analyticsActivities(input.analyticsTaskQueue, { patienceMs: input.patienceMs });
  for (const query of input.queries) {
    progress.detail = query.name;
    const taken = await analytics.syncReportSnapshot({ query, takenAt: input.takenAt });
    progress.pages += taken.skipped ? 0 : 1;
    progress.rows += taken.rows + taken.values;
    progress.requests += taken.requests;
  }
  return { pages: progress.pages, rows: progress.rows, requests: progress.requests, windows: 1 };
}

/** The window, with its own attempts in the ledger (workflows/window-ledger.ts). */
export async function reportSnapshotsWorkflow(input: ReportSnapshotsInput) {
  return recordedWindow(
    {
      stream: 'report_snapshots',
      windowStart: null,
      windowEnd: input.takenAt,
      mode: input.mode,
    },
    input,
    reportSnapshotsWorkflowBody,
  );
}
