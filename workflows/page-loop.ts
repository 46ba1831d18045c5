import type { SyncMode } from '../schemas/run-input.js';
import type { ChildProgress } from '../schemas/run-summary.js';
import { continueAsNewIfSuggested } from './continue-as-new.js';
import type { PageCursorReport, PageGuard } from './page-guard.js';

/** What the loop needs of a page activity's report (activities/sync-page.ts). */
export interface LoopPage extends PageCursorReport {
  readonly done: boolean;
  /** Rows the page wrote. */
  readonly rows?: number;
  /** HTTP requests the page cost, retries included. */
  readonly requests: number;
}

/** What every page activity is told besides its scope. */
export interface PageOptions {
  /** Whether a rejected cursor may restart the scope (once per scope and run: the guard says). */
  readonly allowRestart: boolean;
  /** Full refresh: rows are rewritten at an equal version too. */
  readonly repair: boolean;
  /**
   * The tag of the cursor the previous page of the scope reported (see Destination.readCheckpoint): the
   * destination may then read the checkpoint from memory instead of the warehouse.
   */
  readonly afterCursorTag?: string;
}

/** The options of a scope's next page, with the last cursor tag the guard saw for it. */
export function pageOptions(guard: PageGuard, scope: string, repair: boolean): PageOptions {
  const tag = guard.lastCursorTag(scope);
  return {
    allowRestart: guard.allowRestart(scope),
    repair,
    ...(tag === undefined ? {} : { afterCursorTag: tag }),
  };
}

export interface PageLoop<P extends LoopPage> {
  /** The workflow's input: its mode, and what a continue-as-new starts again from unless `carryOn` says. */
  readonly input: { readonly mode?: SyncMode | undefined };
  readonly scope: string;
  readonly guard: PageGuard;
  readonly progress: ChildProgress;
  /** Reads the next page of the scope: one activity. */
  readonly read: (options: PageOptions) => Promise<P>;
  /** Rows the page wrote, for the progress (default: its `rows`). */
  readonly rows?: (page: P) => number;
  /** Whatever else the stream keeps per page. */
  readonly onPage?: (page: P) => void;
  /** Checked before each page: false stops the loop before the scope is done (a page budget). */
  readonly more?: () => boolean;
  /** The input a continue-as-new starts again from (asked each time: what the workflow carries moves). */
  readonly carryOn?: () => object;
}

/**
 * The workflow half of the page path: reads one scope page by page, one activity per page, until the scope
 * is done (true) or `more` says stop (false). Every page's cursor goes through the guard (a cursor that
 * comes round again fails the window; one restart per scope and run) and its counts into the progress;
 * between pages the workflow continues as new when its history grows large, carrying the guard's probes
 * (the workflow passes them back to `pageGuard`).
 */
export async function readPages<P extends LoopPage>(loop: PageLoop<P>): Promise<boolean> {
  const { input, scope, guard, progress } = loop;
  while (loop.more?.() ?? true) {
    const page = await loop.read(pageOptions(guard, scope, input.mode === 'full_refresh'));
    guard.observe(scope, page);
    progress.pages += 1;
    progress.rows += loop.rows?.(page) ?? page.rows ?? 0;
    progress.requests += page.requests;
    loop.onPage?.(page);
    if (page.done) return true;
    await continueAsNewIfSuggested(
      { ...(loop.carryOn?.() ?? input), cursorProbes: guard.probes() },
      progress,
    );
  }
  return false;
}
