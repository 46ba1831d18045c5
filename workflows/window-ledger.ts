import { ContinueAsNew, workflowInfo } from '@temporalio/workflow';
import type { WindowAttempt } from '../schemas/child-inputs.js';
import type { SyncMode } from '../schemas/run-input.js';
import type { StreamCounts } from '../schemas/run-summary.js';
import type { StreamName } from '../schemas/streams.js';
import { bookkeeping, flushing } from './activity-proxies.js';

import { innermostMessage } from './failures.js';

export interface WindowMeta {
  stream: StreamName;
  windowStart: string | null;
  windowEnd: string | null;
  mode: SyncMode;
  /**
   * The page scope the window reads, begun with its `running` row (a scope a previous attempt completed is
   * read again from its start; one a crash left resumes at its page checkpoint).
   */
  scope?: { stream: string; scope: string };
}

/** One attempt of a window as the ledger keys it. */
export interface LedgerAttempt {
  /** The sync run the window belongs to. */
  readonly runId: string;
  /** The window's name: its workflow id, or for a window the run reads itself, the id it is known by. */
  readonly workflowId: string;
  readonly attempt: WindowAttempt;
  /** Its `running` row is written already (a continue-as-new of the same attempt). */
  readonly begun: boolean;
}

/**
 * A window records its own attempts in `_sync_runs` — one row per attempt, keyed
 * `<parent run>:<window>:<attempt>` — so a window re-run by itself (the UI's Reset or "start workflow
 * like this one", the `replay` command) leaves the ledger true: a `running` row at start, then `succeeded`
 * with its counts or `failed` with the API's code and request id. A window of its own workflow records
 * through `recordedWindow`; one the run reads itself (workflows/run/in-run.ts) calls this directly. The
 * rows cost one activity at each end (beginWindow, finishWindow): each activity is history events.
 */
export async function recordedAttempt<C extends StreamCounts>(
  meta: WindowMeta,
  at: LedgerAttempt,
  body: () => Promise<C>,
): Promise<C> {
  const run = {
    run_id: `${at.runId}:${at.workflowId}:${at.attempt.id}`,
    parent_run_id: at.runId,
    workflow_id: at.workflowId,
    stream: meta.stream,
    window_start: meta.windowStart,
    window_end: meta.windowEnd,
    mode: meta.mode,
    started_at: at.attempt.startedAt,
  };
  const zero = { pages: 0, rows_written: 0, requests: 0 };
  try {
    // Inside the try: a scope that cannot be begun fails the window with its row saying why.
    if (!at.begun) {
      await bookkeeping.beginWindow({
        run: { ...run, ...zero, status: 'running', finished_at: null, error: null },
        ...(meta.scope ? { scope: meta.scope } : {}),
      });
    }
    const counts = await body();
    // A window that wrote rows merges what its pages staged before it records itself succeeded (BigQuery's
    // staged write path; a no-op elsewhere), so `succeeded` in `_sync_runs` means "its rows are in the
    // tables". A window that wrote none skips it (a flush reads what is pending, billed even when nothing
    // changed): what it staged besides rows — checkpoints (read with the staged ones over them), ids seen
    // again, its ledger entries — is merged by the run's flush before its closing reads
    // (workflows/run/finish.ts) or by the next window's.
    await flushing.finishWindow({
      flush: counts.rows > 0,
      run: {
        ...run,
        status: 'succeeded',
        finished_at: new Date().toISOString(),
        pages: counts.pages,
        rows_written: counts.rows,
        requests: counts.requests ?? counts.pages,
        error: null,
      },
    });
    return counts;
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    await bookkeeping.recordRun({
      ...run,
      ...zero,
      status: 'failed',
      finished_at: new Date().toISOString(),
      error: `${at.workflowId}: ${innermostMessage(err)}`,
    });
    throw err;
  }
}

/**
 * A window workflow's attempts in the ledger (recordedAttempt): the attempt is the Temporal run that began
 * it, carried over a continue-as-new in the input, so one attempt stays one row.
 */
export async function recordedWindow<
  I extends { runId: string; attempt?: WindowAttempt | undefined },
  C extends StreamCounts,
>(meta: WindowMeta, input: I, body: (input: I) => Promise<C>): Promise<C> {
  const info = workflowInfo();
  const attempt = input.attempt ?? { id: info.runId, startedAt: new Date().toISOString() };
  return recordedAttempt(
    meta,
    { runId: input.runId, workflowId: info.workflowId, attempt, begun: input.attempt !== undefined },
    () => body({ ...input, attempt }),
  );
}
