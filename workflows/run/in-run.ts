import { workflowInfo } from '@temporalio/workflow';
import type { StreamCounts, StreamProgress } from '../../schemas/run-summary.js';
import { workspaceWorkflowId } from '../../schemas/workflow-names.js';
import { recordedAttempt, type WindowMeta } from '../window-ledger.js';
import { workspaceOfRun } from '../workspace-interceptors.js';
import { type ChildWindow, countedWindow, type RunContext, windowIdOf } from './context.js';

/**
 * A window the run reads with its own activities instead of a child workflow: a reference stream's
 * snapshot, the report snapshots — a few requests each, where a child of its own cost an execution and
 * ~40 history events (its start, a workflow task per activity, its ledger rows), more than the work
 * (bench/RESULTS.md, bench:workspaces). What the child gave them stays: the attempt in `_sync_runs` under
 * the id the child had (`[<workspace>/]<stream>/<from>/<before>`, attempt = the run's Temporal run), the
 * counts in the stream's progress, a failure that fails only its stream, named by the window. What a child
 * gives that these do not need: a replay of its own (`replay` re-runs export windows only) and a
 * continue-as-new (a snapshot is a few pages; `body` must not continue as new). The kinds of stream read
 * this way are listed for the CLI in schemas/workflow-names.ts (`isReadByTheRun`: their window ids name no
 * workflow).
 */
export function inRunWindow(
  ctx: RunContext,
  entry: StreamProgress,
  window: ChildWindow,
  ledger: Pick<WindowMeta, 'windowStart' | 'windowEnd'>,
  body: () => Promise<StreamCounts>,
): Promise<StreamCounts> {
  const windowId = windowIdOf(window);
  const attempt = { id: workflowInfo().runId, startedAt: new Date().toISOString() };
  return countedWindow(entry, windowId, () =>
    recordedAttempt(
      { stream: window.stream, ...ledger, mode: ctx.mode },
      {
        runId: ctx.runId,
        workflowId: workspaceWorkflowId(workspaceOfRun(), windowId),
        attempt,
        begun: false,
      },
      body,
    ),
  );
}
