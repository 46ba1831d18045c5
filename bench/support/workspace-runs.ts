/**
 * Runs of bench:workspaces: started as `runSync` starts a workspace's run (its workflow id, `Workspace`
 * search attribute, fairness key and priority), but awaited without its once-a-second progress query —
 * a thousand runs followed that way would be a thousand queries a second on two workers, a load of the
 * bench's own. The run's status is asked once, after it ended. What Temporal kept of the runs (history
 * events, children open at once) is read back from visibility and the histories.
 */
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import pLimit from 'p-limit';
import type { SyncMode, SyncRunInput, SyncSettings } from '../../schemas/run-input.js';
import type { RunProgress, StreamCounts } from '../../schemas/run-summary.js';
import { ALL_STREAMS } from '../../schemas/streams.js';
import { failureMessage, newRunId, runWorkflowId, workspaceStartOptions } from '../../worker/run-sync.js';
import { SyncRunIdKey } from '../../workflows/search-attributes.js';

/** One run of one workspace, timed from its start request to its result. */
export interface TimedRun {
  workspace: string;
  workflowId: string;
  startedAt: number;
  endedAt: number;
  pages: number;
  /** `succeeded`, `incomplete` or `failed`, as worker/run-sync.ts's followRun tells them apart. */
  status: 'succeeded' | 'incomplete' | 'failed';
  error?: string;
}

export interface RunRequest {
  workspace: string;
  mode: SyncMode;
  settings: SyncSettings;
  range?: SyncRunInput['range'];
}

/** Starts a run of the workspace and resolves when it has ended, with its wall time and pages. */
export async function timedRun(client: Client, taskQueue: string, request: RunRequest): Promise<TimedRun> {
  const now = new Date();
  const input: SyncRunInput = {
    runId: newRunId(now),
    mode: request.mode,
    streams: [...ALL_STREAMS],
    settings: request.settings,
    ...(request.range ? { range: request.range } : {}),
  };
  const start = workspaceStartOptions(request.workspace, request.mode);
  const startedAt = performance.now();
  const handle = await client.workflow.start('syncRunWorkflow', {
    taskQueue,
    workflowId: runWorkflowId(input.runId, request.workspace),
    args: [input],
    typedSearchAttributes: [{ key: SyncRunIdKey, value: input.runId }, ...start.typedSearchAttributes],
    priority: start.priority,
  });
  const base = { workspace: request.workspace, workflowId: handle.workflowId, startedAt };
  try {
    const counts = (await handle.result()) as Record<string, StreamCounts>;
    const endedAt = performance.now();
    const pages = Object.values(counts).reduce((a, c) => a + c.pages, 0);
    return { ...base, endedAt, pages, status: 'succeeded' };
  } catch (err) {
    return { ...base, endedAt: performance.now(), pages: 0, status: 'failed', error: failureMessage(err) };
  }
}

/**
 * Tells the succeeded runs that ended `incomplete` (data set aside) from those that are complete: the run's
 * `progress` query once each, a few at a time (each is a replay on a worker), outside any timed figure.
 */
export async function settleStatuses(client: Client, runs: TimedRun[]): Promise<void> {
  const limit = pLimit(8);
  await Promise.all(
    runs
      .filter((r) => r.status === 'succeeded')
      .map((r) =>
        limit(async () => {
          const progress = await client.workflow.getHandle(r.workflowId).query<RunProgress>('progress');
          if (progress.status === 'incomplete') {
            r.status = 'incomplete';
            r.error = `incomplete: ${JSON.stringify(progress.missing?.summary ?? progress.missing ?? {})}`;
          }
        }),
      ),
  );
}

/** Fails the bench naming every run that did not succeed, its workspace and its error. */
export function assertSucceeded(label: string, runs: TimedRun[]): void {
  const bad = runs.filter((r) => r.status !== 'succeeded');
  if (bad.length === 0) return;
  const lines = bad.slice(0, 20).map((r) => `  ${r.workspace} (${r.workflowId}): ${r.status}: ${r.error}`);
  throw new Error(
    `${label}: ${bad.length} of ${runs.length} runs did not succeed:\n${lines.join('\n')}${bad.length > 20 ? '\n  …' : ''}`,
  );
}

/** Every execution of the namespace (a fresh dev server's: this scale's), from visibility. */
export async function allExecutions(client: Client): Promise<WorkflowExecutionInfo[]> {
  const out: WorkflowExecutionInfo[] = [];
  for await (const e of client.workflow.list({
    query: `WorkflowType != 'fleetBudgetWorkflow'`,
    pageSize: 1000,
  }))
    out.push(e);
  return out;
}

/**
 * History events per run: the events of a run's workflow and of everything it started (children, their
 * children, continued-as-new runs), grouped by their root execution; with how many executions that is.
 */
export function historyPerRun(
  executions: WorkflowExecutionInfo[],
): Map<string, { events: number; executions: number }> {
  const out = new Map<string, { events: number; executions: number }>();
  for (const e of executions) {
    const root = e.rootExecution?.workflowId ?? e.workflowId;
    const entry = out.get(root) ?? { events: 0, executions: 0 };
    entry.events += e.historyLength;
    entry.executions += 1;
    out.set(root, entry);
  }
  return out;
}

/**
 * The most children a workflow had open at once: over its history, +1 at each child initiated, −1 at each
 * child's end (completed, failed, cancelled, timed out, terminated) or failed start.
 */
export async function maxOpenChildren(client: Client, workflowId: string, runId?: string): Promise<number> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  let open = 0;
  let max = 0;
  for (const e of history.events ?? []) {
    if (e.startChildWorkflowExecutionInitiatedEventAttributes) open += 1;
    else if (
      e.startChildWorkflowExecutionFailedEventAttributes ||
      e.childWorkflowExecutionCompletedEventAttributes ||
      e.childWorkflowExecutionFailedEventAttributes ||
      e.childWorkflowExecutionCanceledEventAttributes ||
      e.childWorkflowExecutionTimedOutEventAttributes ||
      e.childWorkflowExecutionTerminatedEventAttributes
    )
      open -= 1;
    max = Math.max(max, open);
  }
  return max;
}
