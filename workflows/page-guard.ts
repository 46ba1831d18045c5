import { ApplicationFailure } from '@temporalio/workflow';

/** What a page activity reports about its cursor (see activities/page-step.ts). */
export interface PageCursorReport {
  /** A short hash of the next cursor (null when the scope is done). */
  readonly cursorTag: string | null;
  /** The scope was restarted from its first page because the API rejected the cursor. */
  readonly restarted: boolean;
}

/**
 * The workflow half of the page path's guards, per scope, within one workflow execution:
 *  - loop guard (style rule 7): a source that hands out a cursor this scope was already given would be read
 *    forever (the activity catches the same cursor twice in a row; this catches longer cycles);
 *  - a rejected cursor restarts a scope at most once per run: after that the activity fails the window.
 */
export function pageGuard(stream: string) {
  const seen = new Map<string, Set<string>>();
  const last = new Map<string, string>();
  const restarted = new Set<string>();
  return {
    /** The tag of the last cursor a page of `scope` reported in this execution (none: not read yet, or done). */
    lastCursorTag: (scope: string): string | undefined => last.get(scope),
    /** Whether the next page of `scope` may restart the scope on a rejected cursor. */
    allowRestart: (scope: string): boolean => !restarted.has(scope),
    /** Scopes whose cursors the guard holds: those begun and not done (as many as are read at once). */
    scopesHeld: (): number => new Set([...seen.keys(), ...last.keys()]).size,
    /** Records a page's cursor; throws (failing the window) when the cursor came round again. */
    observe(scope: string, page: PageCursorReport): void {
      if (page.restarted) {
        restarted.add(scope);
        seen.delete(scope);
      }
      if (page.cursorTag === null) {
        // The scope is done: nothing of it is kept. The threads workflow reads a scope per ticket, thousands
        // per execution; what it keeps must not grow with them. A scope read again later in the
        // execution starts from its first page, so its old cursors would come round again by right. (Only
        // `restarted` stays: one restart per scope and run, and it holds only the scopes that restarted.)
        last.delete(scope);
        seen.delete(scope);
        return;
      }
      last.set(scope, page.cursorTag);
      const tags = seen.get(scope) ?? new Set<string>();
      if (tags.has(page.cursorTag)) {
        throw ApplicationFailure.nonRetryable(
          `${stream} ${scope}: the API returned a cursor it had already returned for this scope (cursor #${page.cursorTag}, after ${tags.size} pages); the window stops instead of reading the same pages forever`,
          'CursorLoop',
        );
      }
      tags.add(page.cursorTag);
      seen.set(scope, tags);
    },
  };
}

export type PageGuard = ReturnType<typeof pageGuard>;
