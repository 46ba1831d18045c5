import {
  ApplicationFailure,
  ParentClosePolicy,
  setHandler,
  WorkflowIdReusePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunPlan } from '../../activities/index.js';
import { RUN_PRIORITY, type SyncRunInput } from '../../schemas/run-input.js';
import type { RunProgress, StreamCounts, StreamProgress } from '../../schemas/run-summary.js';
import type { StreamName } from '../../schemas/streams.js';
import { windowWorkflowId } from '../../schemas/workflow-names.js';
import { innermostMessage, messageOf } from '../failures.js';
import { runProgressQuery } from '../progress.js';
import {
  SyncRunIdKey,
  SyncStreamKey,
  TemporalScheduledStartTimeKey,
  WindowEndKey,
  WindowStartKey,
} from '../search-attributes.js';

/** One stream of a run, as the run starts it: a task that settles when the stream has. */
export type Lane = () => Promise<void>;

/**
 * A run as it begins, before any activity: its id, its bounds, its progress (answering the `progress`
 * query from now on), its own `_sync_runs` row and what it asks the planner.
 */
export function openRun(input: SyncRunInput) {
  const { mode, settings } = input;
  const runId = input.runId || workflowInfo().workflowId;
  const startedAt = new Date().toISOString(); // workflow time: deterministic
  // A scheduled run (including a schedule backfill) reads up to its scheduled time, not the time it ran.
  const scheduled = workflowInfo().typedSearchAttributes.get(TemporalScheduledStartTimeKey);
  const before = input.range?.before ?? scheduled?.toISOString() ?? startedAt;
  const progress: RunProgress = { runId, mode, status: 'running', streams: {} };
  setHandler(runProgressQuery, () => progress);
  return {
    input,
    mode,
    settings,
    patienceMs: settings.sourcePatienceMs,
    runId,
    startedAt,
    before,
    progress,
    /** The run's row in `_sync_runs`, without its status and counts. */
    record: {
      run_id: runId,
      parent_run_id: null,
      workflow_id: workflowInfo().workflowId,
      stream: null,
      window_start: input.range?.from ?? null,
      window_end: before,
      mode,
      started_at: startedAt,
    },
    planInput: {
      mode,
      streams: input.streams,
      settings,
      now: before,
      ...(input.range ? { range: input.range } : {}),
    },
  };
}

/** What every lane of a run shares, once the run is recorded and planned. */
export interface RunContext extends ReturnType<typeof openRun> {
  /** Rows a complete re-read did not receive after this instant are gone from the source. */
  readonly deletionSince: string;
  readonly plan: RunPlan;
}

/** A stream's entry in the run's progress, pending until its lane runs. */
export function track(ctx: RunContext, name: string): StreamProgress {
  const entry: StreamProgress = {
    status: 'pending',
    windowsTotal: 0,
    windowsDone: 0,
    pages: 0,
    rows: 0,
    current: null,
    error: null,
  };
  ctx.progress.streams[name] = entry;
  return entry;
}

/** Runs a stream's lane, keeping its status; a failure is kept as the stream's error and rethrown. */
export async function runStream(entry: StreamProgress, body: () => Promise<void>): Promise<void> {
  entry.status = 'running';
  try {
    await body();
    entry.status = 'succeeded';
  } catch (err) {
    entry.status = 'failed';
    entry.error = messageOf(err);
    throw err;
  }
}

/** How every child of the run starts: findable by its search attributes, at the run's priority. */
export type ChildOptions = ReturnType<typeof childOptions>;

function childOptions(
  ctx: RunContext,
  workflowId: string,
  stream: StreamName,
  windowStart: string,
  windowEnd: string,
) {
  return {
    workflowId,
    taskQueue: workflowInfo().taskQueue,
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    parentClosePolicy: ParentClosePolicy.TERMINATE,
    // Set on every window (not only inherited from the run): a run started by a schedule has the default.
    priority: { priorityKey: RUN_PRIORITY[ctx.mode] },
    typedSearchAttributes: [
      { key: SyncStreamKey, value: stream },
      { key: WindowStartKey, value: new Date(windowStart) },
      { key: WindowEndKey, value: new Date(windowEnd) },
      { key: SyncRunIdKey, value: ctx.runId },
    ],
  };
}

/** One window of a stream, as its child workflow is named and found. */
export interface ChildWindow {
  readonly stream: StreamName;
  /** The first part of the workflow id: an export window's pass; by default the stream. */
  readonly name?: string;
  readonly windowStart: string;
  readonly windowEnd: string;
}

/** A window's workflow id as the run names it (before the workspace interceptor prefixes a workspace's). */
export function windowIdOf(window: ChildWindow): string {
  return windowWorkflowId(window.name ?? window.stream, window.windowStart, window.windowEnd);
}

/**
 * Runs one window of a stream as a child workflow, `<name>/<from>/<before>` (`start` starts it with the
 * options given), and adds its counts to the stream's progress (countedWindow). (The window records its own
 * attempts in `_sync_runs`, workflows/window-ledger.ts.)
 */
export async function child(
  ctx: RunContext,
  entry: StreamProgress,
  window: ChildWindow,
  start: (options: ChildOptions) => Promise<StreamCounts>,
): Promise<StreamCounts> {
  const workflowId = windowIdOf(window);
  return countedWindow(entry, workflowId, () =>
    start(childOptions(ctx, workflowId, window.stream, window.windowStart, window.windowEnd)),
  );
}

/**
 * Runs one window of a stream (a child workflow, or the run's own activities: workflows/run/in-run.ts) and
 * adds its counts to the stream's progress. A failed window fails as `<window id>: <innermost cause>`, the
 * API's code and request id included.
 */
export async function countedWindow(
  entry: StreamProgress,
  windowId: string,
  run: () => Promise<StreamCounts>,
): Promise<StreamCounts> {
  entry.current = windowId;
  try {
    const counts = await run();
    entry.windowsDone += 1;
    entry.pages += counts.pages;
    entry.rows += counts.rows;
    entry.requests = (entry.requests ?? 0) + (counts.requests ?? counts.pages);
    return counts;
  } catch (err) {
    throw ApplicationFailure.nonRetryable(`${windowId}: ${innermostMessage(err)}`, 'StreamFailed');
  } finally {
    entry.current = null;
  }
}
