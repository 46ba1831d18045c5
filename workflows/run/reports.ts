import type { ReportQuery } from '../../schemas/report-query.js';
import type { StreamCounts } from '../../schemas/run-summary.js';
import { analyticsActivities } from '../activity-proxies.js';
import { type Lane, type RunContext, runStream, track } from './context.js';
import { inRunWindow } from './in-run.js';

/**
 * The saved report queries (REPORT_QUERIES), each taken once per run at the run's upper bound, read by the
 * run itself (workflows/run/in-run.ts): one lane.
 */
export function reportLanes(ctx: RunContext): Lane[] {
  const { settings, startedAt, before } = ctx;
  const reportQueries = settings.reportQueries ?? [];
  if (!ctx.input.streams.includes('report_snapshots') || reportQueries.length === 0) return [];
  const entry = track(ctx, 'report_snapshots');
  entry.windowsTotal = 1;
  return [
    () =>
      runStream(entry, async () => {
        await inRunWindow(
          ctx,
          entry,
          { stream: 'report_snapshots', windowStart: startedAt, windowEnd: before },
          { windowStart: null, windowEnd: before },
          () => takeSnapshots(ctx, reportQueries),
        );
      }),
  ];
}

/**
 * Every saved query run once, taken at the run's upper bound: one analytics-class activity per query on the
 * analytics task queue, each snapshot written with its values and the query's checkpoint in one
 * transaction. One after the other; the first one the API rejects fails the stream (those taken stay).
 */
async function takeSnapshots(ctx: RunContext, queries: readonly ReportQuery[]): Promise<StreamCounts> {
  const { settings, patienceMs, before } = ctx;
  const analytics = analyticsActivities(settings.analyticsTaskQueue, { patienceMs });
  const counts = { pages: 0, rows: 0, requests: 0, windows: 1 };
  for (const query of queries) {
    const taken = await analytics.syncReportSnapshot({ query, takenAt: before });
    counts.pages += taken.skipped ? 0 : 1;
    counts.rows += taken.rows + taken.values;
    counts.requests += taken.requests;
  }
  return counts;
}
