import type { ReferenceInput } from '../schemas/child-inputs.js';
import type { StreamCounts } from '../schemas/run-summary.js';
import { encodeStateKey } from '../schemas/state-key.js';
import { STREAMS } from '../schemas/streams.js';
import { bookkeeping, classActivities } from './activity-proxies.js';
import { pageGuard } from './page-guard.js';
import { readPages } from './page-loop.js';
import { trackChildProgress } from './progress.js';
import { recordedWindow } from './window-ledger.js';

/**
 * A reference stream (views with counts, tags, teams, agents, metric catalog): a full snapshot each run,
 * a run of pages per activity on the stream's route class queue, the cursor checkpointed with each page under
 * this workflow's scope; afterwards the rows the snapshot did not contain get `_deleted_at`.
 */
async function referenceStreamWorkflowBody(input: ReferenceInput): Promise<StreamCounts> {
  const progress = trackChildProgress(input.stream, input.carried);
  const { scope } = encodeStateKey({ kind: 'snapshot', stream: input.stream, runId: input.runId });
  const pages = classActivities(STREAMS[input.stream].routeClass, { patienceMs: input.patienceMs });
  await readPages({
    input,
    scope,
    guard: pageGuard(input.stream, input.cursorProbes),
    progress,
    read: (options) =>
      pages.syncReferencePages({
        stream: input.stream,
        scope,
        pageSize: input.pageSize,
        runId: input.runId,
        ...options,
      }),
  });
  // A complete snapshot: whatever it did not contain is gone from the source.
  await bookkeeping.markUnseenDeleted({ table: STREAMS[input.stream].table, since: input.deletionSince });
  return { pages: progress.pages, rows: progress.rows, requests: progress.requests, windows: 1 };
}

/** The window, with its own attempts in the ledger (workflows/window-ledger.ts). */
export async function referenceStreamWorkflow(input: ReferenceInput): Promise<StreamCounts> {
  return recordedWindow(
    { stream: input.stream, windowStart: null, windowEnd: null, mode: input.mode },
    input,
    referenceStreamWorkflowBody,
  );
}
