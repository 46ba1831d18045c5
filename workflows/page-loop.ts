import type { ChildProgress } from '../schemas/sync.js';
import { continueAsNewIfSuggested } from './continue-as-new.js';
import type { PageCursorReport, PageGuard } from './page-guard.js';

/** What the loop needs of a page activity's report (activities/sync-page.ts). */
export interface LoopPage extends PageCursorReport {
  readonly done: boolean;
  /** HTTP requests the page cost, retries included. */
  readonly requests: number;
}

export interface PageLoop<P extends LoopPage> {
  readonly scope: string;
  readonly guard: PageGuard;
  readonly progress: ChildProgress;
  /** Reads the next page of the scope: one activity. */
  readonly read: (allowRestart: boolean) => Promise<P>;
  /** Rows the page wrote, for the progress. */
  readonly rows: (page: P) => number;
  /** Whatever else the stream keeps per page. */
  readonly onPage?: (page: P) => void;
  /** Checked before each page: false stops the loop before the scope is done (a page budget). */
  readonly more?: () => boolean;
  /** The input a continue-as-new starts again from (asked each time: what the workflow carries moves). */
  readonly carryOn: () => object;
}

/**
 * The workflow half of the page path: reads one scope page by page, one activity per page, until the scope
 * is done (true) or `more` says stop (false). Every page's cursor goes through the guard (a cursor that
 * comes round again fails the window; one restart per scope and run) and its counts into the progress;
 * between pages the workflow continues as new when its history grows large.
 */
export async function readPages<P extends LoopPage>(loop: PageLoop<P>): Promise<boolean> {
  const { scope, guard, progress } = loop;
  while (loop.more?.() ?? true) {
    const page = await loop.read(guard.allowRestart(scope));
    guard.observe(scope, page);
    progress.pages += 1;
    progress.rows += loop.rows(page);
    progress.requests += page.requests;
    loop.onPage?.(page);
    if (page.done) return true;
    await continueAsNewIfSuggested(loop.carryOn(), progress);
  }
  return false;
}
