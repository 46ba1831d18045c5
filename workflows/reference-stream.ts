import type { ReferenceInput, StreamCounts } from '../schemas/sync.js';
import { bookkeeping, classActivities } from './activity-proxies.js';
import { continueAsNewIfSuggested } from './continue-as-new.js';
import { pageGuard } from './page-guard.js';
import { trackChildProgress } from './progress.js';
import { recordedWindow } from './window-ledger.js';

/**
 * A reference stream (views with counts, tags, teams, agents, metric catalog): a full snapshot each run,
 * one page per activity, the cursor checkpointed with each page under this workflow's scope; afterwards
 * the rows the snapshot did not contain get `_deleted_at`.
 */
async function referenceStreamWorkflowBody(input: ReferenceInput): Promise<StreamCounts> {
  const progress = trackChildProgress(input.stream, input.carried);
  const scope = `run:${input.runId}`;
  // Views and the metric catalog are list-class routes; tags, teams and agents the directory class.
  const routeClass = input.stream === 'views' || input.stream === 'metric_catalog' ? 'list' : 'directory';
  const pages = classActivities(routeClass, { patienceMs: input.patienceMs });
  const guard = pageGuard(input.stream);
  for (;;) {
    const page = await pages.syncReferencePage({
      stream: input.stream,
      scope,
      pageSize: input.pageSize,
      allowRestart: guard.allowRestart(scope),
      repair: input.mode === 'full_refresh',
    });
    guard.observe(scope, page);
    progress.pages += 1;
    progress.rows += page.rows;
    progress.requests += page.requests;
    if (page.done) break;
    await continueAsNewIfSuggested(input, progress);
  }
  // A complete snapshot: whatever it did not contain is gone from the source.
  if (input.deletionSince) {
    await bookkeeping.markUnseenDeleted({ table: input.stream, since: input.deletionSince });
  }
  return { pages: progress.pages, rows: progress.rows, requests: progress.requests, windows: 1 };
}

/** The window, with its own attempts in the ledger (workflows/window-ledger.ts). */
export async function referenceStreamWorkflow(input: ReferenceInput): Promise<StreamCounts> {
  return recordedWindow(
    { stream: input.stream, windowStart: null, windowEnd: null, mode: input.mode ?? 'incremental' },
    input,
    referenceStreamWorkflowBody,
  );
}
