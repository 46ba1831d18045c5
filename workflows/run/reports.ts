import { executeChild } from '@temporalio/workflow';
import { reportSnapshotsWorkflow } from '../report-snapshots.js';
import { child, type Lane, type RunContext, runStream, track } from './context.js';

/** The saved report queries (REPORT_QUERIES), each taken once per run at the run's upper bound. */
export function reportLanes(ctx: RunContext): Lane[] {
  const { runId, mode, settings, patienceMs, startedAt, before } = ctx;
  const reportQueries = settings.reportQueries ?? [];
  if (!ctx.input.streams.includes('report_snapshots') || reportQueries.length === 0) return [];
  const entry = track(ctx, 'report_snapshots');
  entry.windowsTotal = 1;
  return [
    () =>
      runStream(entry, async () => {
        await child(
          ctx,
          entry,
          { stream: 'report_snapshots', windowStart: startedAt, windowEnd: before },
          (options) =>
            executeChild(reportSnapshotsWorkflow, {
              ...options,
              args: [
                {
                  runId,
                  takenAt: before,
                  queries: reportQueries,
                  analyticsTaskQueue: settings.analyticsTaskQueue,
                  mode,
                  patienceMs,
                },
              ],
            }),
        );
      }),
  ];
}
