import type { SyncMode } from '../schemas/run-input.js';
import type { ChildProgress } from '../schemas/run-summary.js';
import { continueAsNewIfSuggested } from './continue-as-new.js';
import type { PageCursorReport, PageGuard } from './page-guard.js';

/** What the loop needs of one page's report in a page activity's run (activities/sync-page.ts). */
export interface LoopPage extends PageCursorReport {
  readonly done: boolean;
  /** Rows the page wrote. */
  readonly rows?: number;
}

/** What a page activity reports of its run of pages. */
export interface LoopRun<P extends LoopPage> {
  /** One report per page read, in order. */
  readonly pages: readonly P[];
  /** HTTP requests the run cost, retries included. */
  readonly requests: number;
}

/**
 * Pages one activity reads at most before it hands back to the workflow. A run of pages amortises the
 * activity's scheduling and the checkpoint read over its pages; each page still commits on its own, and
 * the run also ends after PAGE_RUN_MS (activities/sync-page.ts), so the workflow's counts stay current.
 */
export const PAGES_PER_ACTIVITY = 50;

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
  /** Reads the next pages of the scope, up to `maxPages`: one activity. */
  readonly read: (options: PageOptions & { readonly maxPages: number }) => Promise<LoopRun<P>>;
  /** Rows the page wrote, for the progress (default: its `rows`). */
  readonly rows?: (page: P) => number;
  /** Whatever else the stream keeps per page. */
  readonly onPage?: (page: P) => void;
  /** Pages the loop may still read (a page budget; default: no bound): at 0 it stops before the scope is done. */
  readonly budget?: () => number;
  /**
   * The input a continue-as-new starts again from (asked each time: what the workflow carries moves); null:
   * the loop never continues as new — it runs in the sync run itself (workflows/run/in-run.ts), whose
   * continue-as-new would begin the run again.
   */
  readonly carryOn?: (() => object) | null;
}

/**
 * The workflow half of the page path: reads one scope run after run of pages, one activity per run, until
 * the scope is done (true) or the budget is spent (false). Every page's cursor goes through the guard (a
 * cursor that comes round again fails the window; one restart per scope and run) and its counts into the
 * progress; between runs the workflow continues as new when its history grows large, carrying the guard's
 * probes (the workflow passes them back to `pageGuard`).
 */
export async function readPages<P extends LoopPage>(loop: PageLoop<P>): Promise<boolean> {
  const { input, scope, guard, progress } = loop;
  for (;;) {
    const budget = loop.budget?.() ?? Number.POSITIVE_INFINITY;
    if (budget <= 0) return false;
    const run = await loop.read({
      ...pageOptions(guard, scope, input.mode === 'full_refresh'),
      maxPages: Math.min(PAGES_PER_ACTIVITY, budget),
    });
    progress.requests += run.requests;
    for (const page of run.pages) {
      guard.observe(scope, page);
      progress.pages += 1;
      progress.rows += loop.rows?.(page) ?? page.rows ?? 0;
      loop.onPage?.(page);
      if (page.done) return true;
    }
    if (loop.carryOn === null) continue;
    await continueAsNewIfSuggested(
      { ...(loop.carryOn?.() ?? input), cursorProbes: guard.probes() },
      progress,
    );
  }
}
