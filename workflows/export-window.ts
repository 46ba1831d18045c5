import type { WindowInput } from '../schemas/child-inputs.js';
import type { StreamCounts } from '../schemas/run-summary.js';
import { encodeStateKey } from '../schemas/state-key.js';
import { streamOfPass } from '../schemas/streams.js';
import { analyticsActivities } from './activity-proxies.js';
import { pageGuard } from './page-guard.js';
import { readPages } from './page-loop.js';
import { trackChildProgress } from './progress.js';
import { recordedWindow } from './window-ledger.js';

/** The window's page scope in `_sync_state`. */
const scopeOf = (input: WindowInput): string =>
  encodeStateKey({ kind: 'window', pass: input.pass, from: input.windowStart, before: input.windowEnd })
    .scope;

/**
 * One export window `[windowStart, windowEnd)` of one pass (CSAT by sent date, CSAT by submitted date,
 * agent sessions). Its id is `<pass>/<from>/<before>`, so a failed window can be found and re-run from the
 * Temporal UI. A re-run of a completed window re-reads it from the start (upserts make that harmless); a
 * run after a crash resumes from the page checkpoint (the scope is begun with the window's ledger row).
 */
async function exportWindowWorkflowBody(input: WindowInput): Promise<StreamCounts> {
  const progress = trackChildProgress(`${input.windowStart} → ${input.windowEnd}`, input.carried);
  const scope = scopeOf(input);
  const analytics = analyticsActivities(input.analyticsTaskQueue, { patienceMs: input.patienceMs });
  await readPages({
    input,
    scope,
    guard: pageGuard(input.pass, input.cursorProbes),
    progress,
    read: (options) =>
      analytics.syncExportPages({
        pass: input.pass,
        windowStart: input.windowStart,
        windowEnd: input.windowEnd,
        pageSize: input.pageSize,
        includeComments: input.includeComments,
        runId: input.runId,
        ...options,
      }),
  });
  return { pages: progress.pages, rows: progress.rows, requests: progress.requests, windows: 1 };
}

/** The window, with its own attempts in the ledger (workflows/window-ledger.ts). */
export async function exportWindowWorkflow(input: WindowInput): Promise<StreamCounts> {
  return recordedWindow(
    {
      stream: streamOfPass(input.pass),
      windowStart: input.windowStart,
      windowEnd: input.windowEnd,
      mode: input.mode,
      scope: { stream: input.pass, scope: scopeOf(input) },
    },
    input,
    exportWindowWorkflowBody,
  );
}
