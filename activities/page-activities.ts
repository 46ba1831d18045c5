import { SupportApiError } from '../connectors/support-api/index.js';
import { encodeStateKey, threadKeyOf } from '../schemas/state-key.js';
import {
  type ExportPass,
  type ReferenceStream,
  STREAMS,
  streamOfPass,
  THREADS_STREAM,
} from '../schemas/streams.js';
import type { ActivityDeps } from './deps.js';
import { PAGE_FETCHERS } from './fetchers.js';
import { PAGE_RUN_MS, type PageRunLimits, syncPages } from './sync-page.js';

/**
 * The page activities of the streams that store every item they read, as the workflows schedule them:
 * each binds its input to the one page path (activities/sync-page.ts): a run of pages of one scope, up to
 * the workflow's `maxPages` (PAGE_RUN_MS at most). Their names also pick the route
 * class's task queue the worker serves them on (worker/workers.ts). Tickets, which store only what
 * changed, are in activities/tickets.ts.
 */

const runLimits = (maxPages: number): PageRunLimits => ({ maxPages, maxMs: PAGE_RUN_MS });

/** Pages of a reference stream's snapshot (scope `run:<run id>`), each written with its checkpoint. */
export function syncReferencePages(deps: ActivityDeps) {
  return (input: {
    stream: ReferenceStream;
    scope: string;
    pageSize: number;
    allowRestart?: boolean;
    /** Full refresh: rows are rewritten at an equal version too (see WriteBatch.repair). */
    repair?: boolean;
    /** The sync run, for `_schema_changes` (absent in workflows started before it was passed down). */
    runId?: string;
    /** The tag of the cursor the workflow last saw for the scope (see Destination.readCheckpoint). */
    afterCursorTag?: string;
    /** Pages this activity reads at most (PageRunLimits). */
    maxPages: number;
  }) =>
    syncPages(
      deps,
      {
        stream: input.stream,
        table: STREAMS[input.stream].table,
        scope: input.scope,
        allowRestart: input.allowRestart ?? true,
        repair: input.repair === true,
        runId: input.runId ?? null,
        lastSeenTag: input.afterCursorTag,
        fetch: (cursor) => PAGE_FETCHERS[input.stream](deps.client, { limit: input.pageSize }, cursor),
      },
      runLimits(input.maxPages),
    );
}

/**
 * Pages of an export window (analytics class), each written with the window's checkpoint (scope
 * `<from>/<before>`); items that break the spec's strict rules are set aside in `_rejected` (a later run
 * re-reads their window).
 */
export function syncExportPages(deps: ActivityDeps) {
  return (input: {
    pass: ExportPass;
    windowStart: string;
    windowEnd: string;
    pageSize: number;
    includeComments: boolean;
    allowRestart?: boolean;
    /** Full refresh: rows are rewritten at an equal version too (see WriteBatch.repair). */
    repair?: boolean;
    /** The sync run, for `_schema_changes` (absent in workflows started before it was passed down). */
    runId?: string;
    /** The tag of the cursor the workflow last saw for the scope (see Destination.readCheckpoint). */
    afterCursorTag?: string;
    /** Pages this activity reads at most (PageRunLimits). */
    maxPages: number;
  }) =>
    syncPages(
      deps,
      {
        stream: input.pass,
        table: STREAMS[streamOfPass(input.pass)].table,
        scope: encodeStateKey({
          kind: 'window',
          pass: input.pass,
          from: input.windowStart,
          before: input.windowEnd,
        }).scope,
        allowRestart: input.allowRestart ?? true,
        repair: input.repair === true,
        runId: input.runId ?? null,
        lastSeenTag: input.afterCursorTag,
        fetch: (cursor) =>
          PAGE_FETCHERS[input.pass](
            deps.client,
            {
              limit: input.pageSize,
              from: input.windowStart,
              before: input.windowEnd,
              extras: input.includeComments,
            },
            cursor,
          ),
      },
      runLimits(input.maxPages),
    );
}

/**
 * One page of one queued thread (scope = ticket number), written with its queue entry's cursor in one
 * transaction; the entry completes with the thread's last page. One request per activity, so the detail
 * task queue's server-enforced rate is the fleet's detail request rate, and a failure costs one page:
 * Temporal retries that page alone (a 429 at Retry-After), never a batch.
 */
export function syncThreadPage(deps: ActivityDeps) {
  return async (input: {
    scope: string;
    allowRestart?: boolean;
    repair?: boolean;
    runId?: string;
    afterCursorTag?: string;
    /**
     * The thread's first page: the tag of its queue entry as the listing returned it
     * (listQueuedThreadCheckpoints), so the entry need not be read again when this process listed it.
     */
    listedTag?: string;
  }) => {
    const key = threadKeyOf(input.scope);
    const { ticketNumber } = key;
    const run = await syncPages(
      deps,
      {
        stream: THREADS_STREAM,
        table: STREAMS[THREADS_STREAM].table,
        scope: input.scope,
        checkpointStream: encodeStateKey(key).stream,
        allowRestart: input.allowRestart ?? true,
        repair: input.repair === true,
        runId: input.runId ?? null,
        // The workflow hands a thread's first page the listed tag, its later pages their cursor's.
        lastSeenTag: input.listedTag ?? input.afterCursorTag,
        fetch: (cursor) => PAGE_FETCHERS[THREADS_STREAM](deps.client, { ticketNumber }, cursor),
        // Read while queued; completed already (a retry of an attempt whose commit went through): nothing.
        settled: (entry) => entry?.status !== 'running',
        gone: (err) => {
          if (!(err instanceof SupportApiError && err.code === 'TICKET_NOT_FOUND')) return false;
          // Deleted since it was queued: nothing to read; the sweep marks the ticket and its messages.
          deps.logger.info({ ticketNumber, requestId: err.requestId }, 'queued ticket no longer exists');
          return true;
        },
      },
      { maxPages: 1 },
    );
    // One page: the report of the page this attempt (or an earlier one) read.
    return run.pages[0]!;
  };
}
