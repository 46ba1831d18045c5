import type { SyncRunInput } from '../schemas/run-input.js';
import type { StreamCounts } from '../schemas/run-summary.js';
import { THREADS_STREAM } from '../schemas/streams.js';
import { runStart } from './activity-proxies.js';
import { allSettledWithLimit } from './concurrency.js';
import { openRun, type RunContext } from './run/context.js';
import { LaneCoordinator } from './run/coordinator.js';
import { exportLanes } from './run/exports.js';
import { finishRun } from './run/finish.js';
import { referenceLanes } from './run/reference.js';
import { reportLanes } from './run/reports.js';
import { ticketsLanes } from './run/tickets.js';

/**
 * One sync run: plans what to read (from the destination's high-water marks), then runs every stream with
 * bounded parallelism — the reference snapshots (read by the run itself), tickets with their threads (child
 * workflows), the export passes window by window (a child each, oldest first, so the high-water mark only
 * moves over complete windows), the report snapshots (read by the run itself). Records the run in `_sync_runs` (every window records itself). A failing stream does
 * not stop the others; the run fails at the end naming each failed stream/window and the API's error code.
 *
 * Each kind of stream is a lane of its own (workflows/run/); this function is the order they start in.
 * Replay safety: the commands (activities, children, signals, `patched` ids) and their order are what
 * recorded histories hold, so a change here must keep them or obey the versioning rule (workflows/README.md).
 */
export async function syncRunWorkflow(input: SyncRunInput): Promise<Record<string, StreamCounts>> {
  const run = openRun(input);
  // One activity: the destination prepared, the run's `running` row, the deletion cutoff (rows a complete
  // re-read did not receive after it are gone from the source), the plan, the unsettled threads requeued.
  const { deletionSince, plan } = await runStart.beginRun({
    run: {
      ...run.record,
      status: 'running',
      finished_at: null,
      pages: 0,
      rows_written: 0,
      requests: 0,
      error: null,
    },
    plan: run.planInput,
    requeueThreads: input.streams.includes(THREADS_STREAM),
  });
  const ctx: RunContext = { ...run, deletionSince, plan };

  // The lanes in the order they start and are listed (the progress keeps this order); how they wait for
  // each other is the coordinator's (workflows/run/coordinator.ts).
  const coordinator = new LaneCoordinator();
  const reference = referenceLanes(ctx);
  const tickets = ticketsLanes(ctx, coordinator);
  const exports = exportLanes(ctx, coordinator.listing);
  const reports = reportLanes(ctx);
  const [otherReference, otherExports, otherReports] = coordinator.others(reference, exports, reports);
  const lanes = [...otherReference, ...tickets, ...otherExports, ...otherReports];
  const results = await allSettledWithLimit(lanes, input.settings.streamParallelism);
  return finishRun(ctx, results);
}
