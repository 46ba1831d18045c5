import { cursorTagOf } from '../connectors/cursor-tag.js';
import {
  CursorLoopError,
  fetchPageAfter,
  type InvalidItem,
  type Page,
} from '../connectors/support-api/index.js';
import {
  type RejectedItem,
  rejectedItemKey,
  type SchemaChangeSighting,
  type TableName,
} from '../schemas/warehouse.js';
import type { ActivityDeps } from './deps.js';

/**
 * The fetch of the page path (activities/sync-page.ts): the page after `cursor` (restarting the scope once
 * per run when the API rejects the cursor), guarded against a source that repeats a cursor or serves
 * mostly items that cannot be stored, with what is stored and what is set aside told apart.
 */
export interface PageStepInput<P> {
  /** Stream or export pass (as `_sync_state` names it) and scope (window, run, ticket number). */
  readonly stream: string;
  readonly scope: string;
  readonly cursor: string | null;
  /**
   * Whether a rejected cursor may restart the scope from its start. The workflow allows it once per scope
   * and run (`workflows/page-guard.ts`): a source that keeps rejecting must fail the window, not spin.
   */
  readonly allowRestart: boolean;
  readonly fetch: (cursor: string | null) => Promise<P>;
}

export interface PageStep<P> {
  readonly page: P;
  /** The scope was restarted from its first page (the cursor was rejected). */
  readonly restarted: boolean;
  /** The cursor this page was fetched with (null for the first page). */
  readonly cursor: string | null;
  /** A short hash of the next cursor for the workflow's loop guard (null when the scope is done). */
  readonly nextCursorTag: string | null;
}

export async function fetchPageStep<P extends Page<unknown, unknown>>(
  deps: ActivityDeps,
  input: PageStepInput<P>,
): Promise<PageStep<P>> {
  const where = `${input.stream} ${input.scope}`;
  const fetched = await fetchPageAfter(input.fetch, input.cursor, (rejection) => {
    if (!input.allowRestart) {
      throw Object.assign(
        new Error(
          `${where}: the API rejected the cursor again after the scope was restarted in this run (${rejection.apiError.code}, request_id ${rejection.apiError.requestId}); the window stops instead of restarting forever`,
        ),
        { nonRetryable: true },
      );
    }
    deps.logger.warn(
      { where, requestId: rejection.apiError.requestId },
      'cursor rejected by the API: restarting the scope from its start',
    );
    return true;
  });
  const step: PageStep<P> = { ...fetched, nextCursorTag: nextTag(fetched.page) };
  const { page } = step;
  // Loop guard (style rule 7): a next cursor equal to the one that produced the page would read it forever.
  if (page.hasMore && page.nextCursor !== null && page.nextCursor === step.cursor) {
    throw new CursorLoopError(where, page.nextCursor);
  }
  assertMostlyStorable(where, page);
  return step;
}

/** A short, stable tag of the next cursor, for the workflow's loop guard (cursors stay out of history). */
function nextTag(page: Page<unknown, unknown>): string | null {
  return page.hasMore && page.nextCursor !== null ? cursorTagOf(page.nextCursor) : null;
}

/**
 * A page on which most items break what the spec defines is not a few odd items but a reader that does not
 * understand the source (or a source gone wrong): the window fails, loudly, instead of looking like success.
 * At least `MIN_REJECTED_TO_FAIL` items, so a small page with one poison item is set aside, not failed.
 */
const MIN_REJECTED_TO_FAIL = 3;

function assertMostlyStorable(where: string, page: Page<unknown, unknown>): void {
  const rejected = setAsideCount(page);
  const total = rejected + page.items.length;
  if (rejected >= MIN_REJECTED_TO_FAIL && rejected * 2 > total) {
    const first = page.rejected[0]!;
    throw Object.assign(
      new Error(
        `${where}: ${rejected} of ${total} items on the page break the spec's rules, e.g. item ${first.index}${first.itemId === undefined ? '' : ` (id ${first.itemId})`}: ${first.reason}; the window fails rather than set most of a page aside`,
      ),
      { nonRetryable: true },
    );
  }
}

/** Items the page set aside: those it keeps for `_rejected` and those past its cap, counted. */
export function setAsideCount(page: Page<unknown, unknown>): number {
  return page.rejected.length + page.rejectedPastCap;
}

/** The page's invalid items (those it keeps, see MAX_REJECTED_KEPT) as `_rejected` rows of `table`, with where they were read. */
export function rejectedOf(
  table: TableName,
  stream: string,
  scope: string,
  step: PageStep<Page<unknown, unknown>>,
): RejectedItem[] {
  return step.page.rejected.map((r: InvalidItem) => ({
    table,
    itemKey: rejectedItemKey(r.itemId ?? null, r.raw),
    itemId: r.itemId ?? null,
    stream,
    scope,
    pageCursor: step.cursor,
    reason: r.reason,
    raw: r.raw,
  }));
}

/** The page's drift (what its stored items hold that their schema does not know) as `_schema_changes` sightings. */
export function schemaChangesOf(
  table: TableName,
  stream: string,
  runId: string | null,
  step: PageStep<Page<unknown, unknown>>,
): SchemaChangeSighting[] {
  return step.page.drift.map((o) => ({ ...o, table, stream, runId }));
}

/** Pairs each stored item with the JSON object it came from (the warehouse keeps both). */
export function rowsOf<T, M>(page: Page<T, M>): { item: T; raw: Record<string, unknown> }[] {
  return page.items.map((item, index) => ({ item, raw: page.rawItems[index] ?? {} }));
}
