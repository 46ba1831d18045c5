import { randomUUID } from 'node:crypto';
import { type Client, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import type { AuditSummary } from '../schemas/audit.js';
import type { ForecastComparison } from '../schemas/forecast.js';
import type { ReconcileSummary } from '../schemas/reconcile.js';
import { RUN_PRIORITY, SyncRunInput } from '../schemas/run-input.js';
import type { MissingData, RunProgress, SchemaDriftSummary, StreamCounts } from '../schemas/run-summary.js';
import { DEFAULT_WORKSPACE } from '../schemas/workspaces.js';
import { SyncRunIdKey, WorkspaceKey } from '../workflows/search-attributes.js';
import { annotateFailingSource } from './source-health.js';

/** The JSON summary a run ends with (the last stdout line of `sync --once`). */
export interface RunSummary {
  run_id: string;
  workflow_id: string;
  mode: SyncRunInput['mode'];
  /**
   * `incomplete`: every stream ran, but the warehouse is known to miss data (items set aside in `_rejected`,
   * failed threads; see `missing`). Never `succeeded` while data is missing.
   */
  status: 'succeeded' | 'incomplete' | 'failed';
  duration_ms: number;
  streams: Record<string, StreamCounts & { status: string }>;
  totals: { pages: number; rows: number };
  requests?: Record<string, { requests: number; rate_limited: number; waits: number; wait_ms: number }>;
  /** The source-vs-warehouse check after the streams (a run that synced tickets); mismatches are warnings. */
  reconciliation?: ReconcileSummary;
  /** What the warehouse misses after the run and how it comes back (set when anything is missing). */
  missing?: MissingData;
  /** The forecast `plan` made for this run, next to the run's own requests per class and wall time. */
  forecast?: ForecastComparison;
  /** Schema drift the run saw first (`_schema_changes`; set when there was any). */
  schema_changes?: SchemaDriftSummary;
  /**
   * The field-level audit after the run: rows re-read from the live API (`sampled`), those that differed
   * (`differs`, healed at once: `healed`), the 95 % upper bound on the share that differs, per table too.
   */
  audit?: AuditSummary;
  /**
   * Strings and member names the source's answers held a configured secret in (the API key echoed back),
   * stored and shown with it replaced by `[redacted]`. Counted by the process that runs `sync` (its local
   * worker's requests), like `requests`; a worker fleet counts in its logs' warnings.
   */
  secrets_scrubbed?: number;
  error?: string;
}

/** The process exit code of a run: 0 succeeded, 1 failed, 3 incomplete (ran, but data is missing). */
export function exitCodeOf(summary: Pick<RunSummary, 'status'>): number {
  return summary.status === 'succeeded' ? 0 : summary.status === 'incomplete' ? 3 : 1;
}

export function newRunId(now: Date): string {
  return `${now.toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}`;
}

/** `sync-run/<runId>`, or `sync-run/<workspace>/<runId>` for a workspace of SYNC_WORKSPACES_FILE. */
export function runWorkflowId(runId: string, workspace: string = DEFAULT_WORKSPACE): string {
  return workspace === DEFAULT_WORKSPACE ? `sync-run/${runId}` : `sync-run/${workspace}/${runId}`;
}

/**
 * How a run of `workspace` is started: its `Workspace` search attribute (which everything it starts
 * inherits, workflows/workspace-interceptors.ts; none for the deployment's own) and its workspace as the
 * fairness key beside its mode's priority.
 */
export function workspaceStartOptions(workspace: string, mode: SyncRunInput['mode']) {
  return {
    typedSearchAttributes: workspace === DEFAULT_WORKSPACE ? [] : [{ key: WorkspaceKey, value: workspace }],
    priority: { priorityKey: RUN_PRIORITY[mode], fairnessKey: workspace },
  };
}

/** The visibility query that finds the runs of `workspace` (the deployment's own: those without one). */
export function workspaceQuery(workspace: string): string {
  return workspace === DEFAULT_WORKSPACE
    ? `${WorkspaceKey.name} IS NULL`
    : `${WorkspaceKey.name} = '${workspace}'`;
}

/**
 * Starts a sync run workflow and waits for it, calling `onProgress` with the run's `progress` query about
 * once a second. Never throws for a failed run: the summary says what failed (stream/window, API code).
 */
export async function runSync(
  client: Client,
  taskQueue: string,
  input: SyncRunInput,
  onProgress?: (progress: RunProgress) => void,
  signal?: AbortSignal,
  workspace: string = DEFAULT_WORKSPACE,
): Promise<RunSummary> {
  const start = workspaceStartOptions(workspace, input.mode);
  const handle = await client.workflow.start('syncRunWorkflow', {
    taskQueue,
    workflowId: runWorkflowId(input.runId, workspace),
    args: [input],
    typedSearchAttributes: [{ key: SyncRunIdKey, value: input.runId }, ...start.typedSearchAttributes],
    priority: start.priority,
  });
  return followRun(handle, input, onProgress, signal);
}

/**
 * A run of syncRunWorkflow that is still going (started by an earlier process that was interrupted), so
 * that a restarted main job continues it instead of starting a second run beside it.
 */
export async function findRunningRun(
  client: Client,
  /** Only runs of this workspace; none: any run (a deployment of one workspace, which may not have registered `Workspace`). */
  workspace?: string,
): Promise<{ handle: WorkflowHandle; input: SyncRunInput } | null> {
  const ofWorkspace = workspace === undefined ? '' : ` AND ${workspaceQuery(workspace)}`;
  for await (const execution of client.workflow.list({
    query: `WorkflowType = 'syncRunWorkflow' AND ExecutionStatus = 'Running'${ofWorkspace}`,
  })) {
    const handle = client.workflow.getHandle(execution.workflowId);
    const history = await handle.fetchHistory();
    const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
    const input = SyncRunInput.safeParse(
      await client.options.loadedDataConverter.payloadConverter.fromPayload(payloads[0]!),
    );
    if (payloads.length && input.success) return { handle, input: input.data };
  }
  return null;
}

/** Waits for a run, calling `onProgress` with its `progress` query about once a second. */
export async function followRun(
  handle: WorkflowHandle,
  input: SyncRunInput,
  onProgress?: (progress: RunProgress) => void,
  signal?: AbortSignal,
): Promise<RunSummary> {
  const started = Date.now();
  const workflowId = handle.workflowId;
  let last: RunProgress | undefined;
  let polling = true;
  let polls = 0;
  // The pause between two polls ends early when the run does: its summary is not a second late.
  let wake = () => {};
  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1000);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const poll = (async () => {
    while (polling) {
      try {
        last = await handle.query<RunProgress>('progress');
        // Every few seconds, whether a window's page keeps failing (shown as "source failing since …").
        polls += 1;
        if (onProgress && polls % 5 === 0) last = await annotateFailingSource(handle.client, last);
        onProgress?.(last);
      } catch {
        // The first workflow task may not have run yet; try again.
      }
      if (polling) await pause();
    }
  })();
  let error: string | undefined;
  let counts: Record<string, StreamCounts> = {};
  try {
    const aborted = new Promise<never>((_, reject) => {
      if (signal?.aborted) reject(new Error('interrupted'));
      signal?.addEventListener('abort', () =>
        reject(
          new Error(
            `interrupted: run ${input.runId} stays in Temporal and resumes when a worker polls again`,
          ),
        ),
      );
    });
    counts = (await Promise.race([handle.result(), aborted])) as Record<string, StreamCounts>;
  } catch (err) {
    error = failureMessage(err);
  } finally {
    polling = false;
    wake();
    await poll;
  }
  try {
    last = await handle.query<RunProgress>('progress');
    onProgress?.(last);
  } catch {
    // A closed workflow still answers queries; if not, keep the last progress seen.
  }
  const streams: RunSummary['streams'] = {};
  for (const [name, entry] of Object.entries(last?.streams ?? {})) {
    streams[name] = {
      status: entry.status,
      pages: entry.pages,
      rows: entry.rows,
      windows: entry.windowsDone,
      ...(entry.requests !== undefined ? { requests: entry.requests } : {}),
    };
  }
  for (const [name, c] of Object.entries(counts))
    streams[name] = { ...c, status: streams[name]?.status ?? 'succeeded' };
  const totals = Object.values(streams).reduce(
    (a, s) => ({ pages: a.pages + s.pages, rows: a.rows + s.rows }),
    {
      pages: 0,
      rows: 0,
    },
  );
  return {
    run_id: input.runId,
    workflow_id: workflowId,
    mode: input.mode,
    status: error ? 'failed' : last?.status === 'incomplete' ? 'incomplete' : 'succeeded',
    duration_ms: Date.now() - started,
    streams,
    totals,
    ...(last?.reconciliation ? { reconciliation: last.reconciliation } : {}),
    ...(last?.missing?.summary ? { missing: last.missing } : {}),
    ...(last?.schemaChanges?.recorded ? { schema_changes: last.schemaChanges } : {}),
    ...(last?.audit ? { audit: last.audit } : {}),
    ...(error ? { error } : {}),
  };
}

/** The innermost message of a workflow failure: "<stream>/<from>/<before>: … HTTP 401 INVALID_API_KEY …". */
export function failureMessage(err: unknown): string {
  if (err instanceof WorkflowFailedError && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}
