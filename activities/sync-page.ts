import { Context } from '@temporalio/activity';
import { lastSeen, runScope } from '../connectors/destination.js';
import type { Page } from '../connectors/support-api/index.js';
import { newestStampMs } from '../schemas/freshness.js';
import { streamOf } from '../schemas/streams.js';
import type { Checkpoint, TableName } from '../schemas/warehouse.js';
import { type CheckpointCounts, nextCheckpoint } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';
import { earlierProgress, recordProgress } from './heartbeat.js';
import {
  fetchPageStep,
  type PageStep,
  rejectedOf,
  rowsOf,
  schemaChangesOf,
  setAsideCount,
} from './page-step.js';
import { recordedDrift } from './recorded-drift.js';

type AnyPage = Page<unknown, unknown>;

/** One scope of one stream, as the page path reads it. */
export interface PageTarget<P extends AnyPage> {
  /** Stream or export pass, as `_sync_state`, `_rejected` and error messages name it. */
  readonly stream: string;
  readonly table: TableName;
  /** Window, run or ticket number. */
  readonly scope: string;
  /** `_sync_state` stream of the scope's checkpoint when it is not `stream` (the thread queue). */
  readonly checkpointStream?: string;
  /** Whether a rejected cursor may restart the scope (see PageStepInput.allowRestart). */
  readonly allowRestart: boolean;
  /** Full refresh: rows are rewritten at an equal version too (see WriteBatch.repair). */
  readonly repair: boolean;
  /**
   * The sync run the page belongs to: for `_schema_changes` (a change counts once per run) and the
   * destination's per-run memory (RunScope); null for a workflow started before the runs were passed down to
   * its pages.
   */
  readonly runId: string | null;
  /**
   * The tag of the scope's checkpoint as the workflow last saw it (absent on its first page in this workflow
   * execution): of the cursor the previous page reported, or of the entry as a listing returned it (a
   * thread's first page). The destination may answer the checkpoint read from memory
   * (Destination.readCheckpoint).
   */
  readonly lastSeenTag?: string | undefined;
  /** The page after a cursor (activities/fetchers.ts). */
  readonly fetch: (cursor: string | null) => Promise<P>;
  /** Whether the scope's checkpoint leaves nothing to read (default: the checkpoint is complete). */
  readonly settled?: (checkpoint: Checkpoint | null) => boolean;
  /** Whether a failed fetch means the scope is gone from the source: it then completes with nothing read. */
  readonly gone?: (err: unknown) => boolean;
}

/** What a page activity reports: never rows, only how far the scope is and what its cursor did. */
export interface PageReport {
  readonly done: boolean;
  /** Rows written (for tickets: new or changed rows). */
  readonly rows: number;
  /** Items set aside (in `_rejected`, up to the cap a page keeps; the rest counted). */
  readonly rejected: number;
  /** Pages read: 0 when the scope had nothing left to read. */
  readonly pages: number;
  /** A short hash of the next cursor, for the workflow's loop guard (workflows/page-guard.ts). */
  readonly cursorTag: string | null;
  /** The scope was restarted from its first page (the cursor was rejected). */
  readonly restarted: boolean;
}

/**
 * How a stream stores its page with the scope's next checkpoint, in one destination transaction, and what
 * it reports besides the page report (`nothing`: that part of its report when there was nothing to read).
 * The write returns the scope's next checkpoint as well (`checkpoint`): a run of pages carries it to the
 * next page instead of reading it back.
 */
export interface PageStore<P extends AnyPage, X extends object> {
  write(
    deps: ActivityDeps,
    target: PageTarget<P>,
    step: PageStep<P>,
    previous: CheckpointCounts | null,
  ): Promise<Pick<PageReport, 'done' | 'rows' | 'rejected'> & X & { checkpoint: CheckpointCounts }>;
  /** Whether the page ends the scope, known before it is written (default: the API has no more pages). */
  doneAfter?(step: PageStep<P>): boolean;
  readonly nothing: X;
}

/**
 * What STORE_ALL writes of one page: every item (merged by id) with the scope's next checkpoint, the items
 * that break the spec set aside, its drift not yet recorded by this process. Several pages' writes make one
 * batch of a group commit (activities/thread-batch.ts).
 */
export function pageWrite(
  deps: ActivityDeps,
  target: PageTarget<AnyPage>,
  step: PageStep<AnyPage>,
  previous: CheckpointCounts | null,
) {
  const { page } = step;
  return {
    rows: rowsOf(page),
    checkpoint: nextCheckpoint(previous, {
      stream: target.checkpointStream ?? target.stream,
      scope: target.scope,
      cursor: page.nextCursor,
      done: !page.hasMore,
      rows: page.items.length,
    }),
    rejected: rejectedOf(target.table, target.stream, target.scope, step),
    schemaChanges: recordedDrift(deps).unrecorded(
      schemaChangesOf(target.table, target.stream, target.runId, step),
    ),
  };
}

/** Every item of the page is written (merged by id), the items that break the spec set aside. */
export const STORE_ALL: PageStore<AnyPage, object> = {
  nothing: {},
  async write(deps, target, step, previous) {
    const { page } = step;
    const write = pageWrite(deps, target, step, previous);
    const staged = await deps.destination.writeTables(
      [{ table: target.table, ...write, rows: write.rows as never, repair: target.repair }],
      undefined,
      { stage: true, ...runScope(deps.destination, target.runId) },
    );
    recordedDrift(deps).remember(write.schemaChanges);
    // Rows staged: those the warehouse stored as they are may be left out (a re-read that changed nothing
    // writes nothing, and its window skips its flush).
    return {
      done: !page.hasMore,
      rows: staged.rows,
      rejected: setAsideCount(page),
      checkpoint: write.checkpoint,
    };
  },
};

const NOTHING_READ: PageReport = {
  done: true,
  rows: 0,
  rejected: 0,
  pages: 0,
  cursorTag: null,
  restarted: false,
};

/**
 * A run of pages of one scope hands back to its workflow after this long at most (between pages): its
 * progress and counts stay current, and a paced source still yields to a continue-as-new.
 */
export const PAGE_RUN_MS = 15_000;

/** How many pages one activity reads of a scope, and for how long, before it hands back to its workflow. */
export interface PageRunLimits {
  readonly maxPages: number;
  /** Checked between pages: a paced or slow source still hands back within about this long. */
  readonly maxMs?: number;
}

/** What a run of pages reports: one report per page read, in order (one, with nothing read, when settled). */
export interface PageRunReport<R extends PageReport> {
  readonly pages: readonly R[];
}

/**
 * The page path of every stream: a run of pages of one scope in one activity. It reads the scope's
 * checkpoint once, then page after page fetches the page after the cursor (with the cursor restart and the
 * loop guard, activities/page-step.ts) and stores it with the next checkpoint in one destination
 * transaction — every item (`STORE_ALL`) unless the stream stores its own way (tickets: only what changed)
 * — carrying that checkpoint to the next page in memory. The next request is in flight while a page is
 * written. Each page commits on its own, so a crash re-fetches at most the pages in flight (two): a retried
 * attempt resumes from the committed checkpoint, and the reports of the pages an earlier attempt committed
 * come back from its heartbeat. The run ends with the scope, at `limits`, after a page that restarted the
 * scope or repeated a cursor of this run (the workflow's guard judges both), or when cancelled.
 */
export function syncPages(
  deps: ActivityDeps,
  target: PageTarget<AnyPage>,
  limits: PageRunLimits,
): Promise<PageRunReport<PageReport>>;
export function syncPages<P extends AnyPage, X extends object>(
  deps: ActivityDeps,
  target: PageTarget<P>,
  limits: PageRunLimits,
  store: PageStore<P, X>,
): Promise<PageRunReport<PageReport & X>>;
export async function syncPages(
  deps: ActivityDeps,
  target: PageTarget<AnyPage>,
  limits: PageRunLimits,
  store: PageStore<AnyPage, object> = STORE_ALL,
): Promise<PageRunReport<PageReport>> {
  const startedAt = Date.now();
  const reports: PageReport[] = [...(earlierProgress<PageRunReport<PageReport>>()?.pages ?? [])];
  if (reports.at(-1)?.done || reports.length >= limits.maxPages) return { pages: reports };
  const checkpointStream = target.checkpointStream ?? target.stream;
  const stored = await deps.destination.readCheckpoint(
    checkpointStream,
    target.scope,
    lastSeen(deps.destination, reports.at(-1)?.cursorTag ?? target.lastSeenTag),
  );
  if ((target.settled ?? isComplete)(stored))
    return { pages: [...reports, { ...NOTHING_READ, ...store.nothing }] };
  const stream = streamOf(target.stream);
  const tags = new Set(reports.flatMap((r) => (r.cursorTag === null ? [] : [r.cursorTag])));
  let allowRestart = target.allowRestart && !reports.some((r) => r.restarted);
  let previous: CheckpointCounts | null = stored;
  await refuseEndlessScope(deps, target, checkpointStream, previous, store === STORE_ALL);
  let next: Promise<PageStep<AnyPage>> | null = fetchStep(deps, target, stored?.cursor ?? null, allowRestart);
  while (next !== null) {
    let step: PageStep<AnyPage>;
    try {
      step = await next;
    } catch (err) {
      if (!target.gone?.(err)) throw err;
      await deps.destination.writeTables(
        [],
        [
          nextCheckpoint(previous, {
            stream: checkpointStream,
            scope: target.scope,
            cursor: null,
            done: true,
            rows: 0,
          }),
        ],
      );
      reports.push({ ...NOTHING_READ, ...store.nothing });
      break;
    }
    next = null;
    const { items, rejected } = step.page;
    deps.observer?.pageRead(stream, newestStampMs(stream, [...items, ...rejected.map((r) => r.raw)]));
    if (step.restarted) allowRestart = false;
    const repeated = step.nextCursorTag !== null && tags.has(step.nextCursorTag);
    if (step.nextCursorTag !== null) tags.add(step.nextCursorTag);
    const goesOn =
      !(store.doneAfter?.(step) ?? !step.page.hasMore) &&
      !step.restarted &&
      !repeated &&
      reports.length + 1 < limits.maxPages &&
      (limits.maxMs === undefined || Date.now() - startedAt < limits.maxMs) &&
      !isCancelled();
    // The next request goes while this page is written; a failed write fails the attempt, and its retry
    // reads that page again from the committed checkpoint.
    if (goesOn) {
      next = fetchStep(deps, target, step.page.nextCursor, allowRestart);
      next.catch(() => undefined);
    }
    // A restarted scope counts its pages and rows from its start again.
    const base = step.restarted && previous ? { ...previous, pages: 0, rows: 0 } : previous;
    const { checkpoint, ...written } = await store.write(deps, target, step, base);
    previous = checkpoint;
    deps.observer?.rowsWritten({
      stream,
      table: target.table,
      rows: written.rows,
      rejected: written.rejected,
      newestMs: newestStampMs(stream, items),
      setAsideNewestMs: newestStampMs(
        stream,
        rejected.map((r) => r.raw),
      ),
    });
    reports.push({ ...written, pages: 1, cursorTag: step.nextCursorTag, restarted: step.restarted });
    recordProgress({ pages: reports } satisfies PageRunReport<PageReport>);
    if (next !== null)
      await refuseEndlessScope(deps, target, checkpointStream, previous, store === STORE_ALL);
  }
  return { pages: reports };
}

function fetchStep(
  deps: ActivityDeps,
  target: PageTarget<AnyPage>,
  cursor: string | null,
  allowRestart: boolean,
): Promise<PageStep<AnyPage>> {
  return fetchPageStep(deps, {
    stream: target.stream,
    scope: target.scope,
    cursor,
    allowRestart,
    fetch: target.fetch,
  });
}

function isCancelled(): boolean {
  try {
    return Context.current().cancellationSignal.aborted;
  } catch {
    return false;
  }
}

/** SYNC_MAX_PAGES' default: 200,000 pages of 100 items, far beyond any workspace's window, list or thread. */
export const DEFAULT_MAX_PAGES_PER_SCOPE = 200_000;

/**
 * Pages a scope may take without a single item while the API says there are more. The spec allows an empty
 * page with `has_more: true` (a filter that matched nothing on this page), so one is never refused; a hundred
 * in a row with no item between them is a source that will not end, and waiting for SYNC_MAX_PAGES would
 * cost hours of requests. Counted from the checkpoint's items, so across continue-as-new and runs.
 */
export const MAX_EMPTY_PAGES_PER_SCOPE = 100;

/**
 * The page bound of a scope (SYNC_MAX_PAGES), counted by its checkpoint: so it holds across a workflow's
 * continue-as-new and across runs, where the workflow's loop guard (workflows/page-guard.ts) sees only what
 * it carries. A source that answers `has_more: true` for ever — with fresh cursors, no items, or a cycle
 * longer than any guard holds — ends here: the window fails naming the scope and the bound, and the scope
 * is set back to its first page, so its next read (a source fixed since) reads it whole rather than failing
 * again at once.
 */
async function refuseEndlessScope(
  deps: ActivityDeps,
  target: PageTarget<AnyPage>,
  checkpointStream: string,
  previous: CheckpointCounts | null,
  /** The checkpoint's `rows` counts every item served (a store of its own may count only what changed). */
  rowsCountItems: boolean,
): Promise<void> {
  const bound = endlessScopeBound(deps, previous, rowsCountItems);
  if (bound === null || previous === null) return;
  const maxPages = deps.maxPagesPerScope ?? DEFAULT_MAX_PAGES_PER_SCOPE;
  await deps.destination.writeTables(
    [],
    [
      {
        stream: checkpointStream,
        scope: target.scope,
        cursor: null,
        high_water_mark: previous.high_water_mark,
        status: 'running',
        pages: 0,
        rows: 0,
      },
    ],
  );
  throw Object.assign(
    new Error(
      bound === 'empty'
        ? `${target.stream} ${target.scope}: ${previous.pages} pages read without a single item and the API still says there are more; the window fails instead of reading for ever, and its next read starts from its first page`
        : `${target.stream} ${target.scope}: ${previous.pages} pages read and the API still says there are more (SYNC_MAX_PAGES is ${maxPages}); the window fails instead of reading for ever, and its next read starts from its first page`,
    ),
    { nonRetryable: true },
  );
}

/** Which bound a scope's checkpoint has reached (refuseEndlessScope), if any. */
export function endlessScopeBound(
  deps: Pick<ActivityDeps, 'maxPagesPerScope'>,
  previous: CheckpointCounts | null,
  rowsCountItems: boolean,
): 'empty' | 'max' | null {
  if (previous === null) return null;
  const maxPages = deps.maxPagesPerScope ?? DEFAULT_MAX_PAGES_PER_SCOPE;
  if (rowsCountItems && previous.rows === 0 && previous.pages >= MAX_EMPTY_PAGES_PER_SCOPE) return 'empty';
  return previous.pages >= maxPages ? 'max' : null;
}

function isComplete(checkpoint: Checkpoint | null): boolean {
  return checkpoint?.status === 'complete';
}
