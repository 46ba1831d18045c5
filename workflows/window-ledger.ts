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
}

/**
 * A window records its own attempts in `_sync_runs` — one row per execution of its workflow id, keyed
 * `<parent run>:<workflow id>:<attempt>` — so a window re-run by itself (the UI's Reset or "start workflow
 * like this one", the `replay` command) leaves the ledger true: a `running` row at start, then `succeeded`
 * with its counts or `failed` with the API's code and request id. The attempt (the Temporal run that began
 * it) is carried over a continue-as-new, so one attempt stays one row.
 */
export async function recordedWindow<
  I extends { runId: string; attempt?: WindowAttempt | undefined },
  C extends StreamCounts,
>(meta: WindowMeta, input: I, body: (input: I) => Promise<C>): Promise<C> {
  const info = workflowInfo();
  const attempt = input.attempt ?? { id: info.runId, startedAt: new Date().toISOString() };
  const record = {
    run_id: `${input.runId}:${info.workflowId}:${attempt.id}`,
    parent_run_id: input.runId,
    workflow_id: info.workflowId,
    stream: meta.stream,
    window_start: meta.windowStart,
    window_end: meta.windowEnd,
    mode: meta.mode,
    started_at: attempt.startedAt,
  };
  const zero = { pages: 0, rows_written: 0, requests: 0 };
  if (!input.attempt) {
    await bookkeeping.recordRun({ ...record, ...zero, status: 'running', finished_at: null, error: null });
  }
  try {
    const counts = await body({ ...input, attempt });
    // A window that wrote rows merges what its pages staged before it records itself succeeded (BigQuery's
    // staged write path; a no-op elsewhere), so `succeeded` in `_sync_runs` means "its rows are in the
    // tables". A window that wrote none skips it (a flush reads what is pending, billed even when nothing
    // changed): what it staged besides rows — checkpoints (read with the staged ones over them), ids seen
    // again, its ledger entries — is merged by the run's flush before its closing reads
    // (workflows/run/finish.ts) or by the next window's.
    if (counts.rows > 0) await flushing.flushStaged();
    await bookkeeping.recordRun({
      ...record,
      status: 'succeeded',
      finished_at: new Date().toISOString(),
      pages: counts.pages,
      rows_written: counts.rows,
      requests: counts.requests ?? counts.pages,
      error: null,
    });
    return counts;
  } catch (err) {
    if (err instanceof ContinueAsNew) throw err;
    await bookkeeping.recordRun({
      ...record,
      ...zero,
      status: 'failed',
      finished_at: new Date().toISOString(),
      error: `${info.workflowId}: ${innermostMessage(err)}`,
    });
    throw err;
  }
}
