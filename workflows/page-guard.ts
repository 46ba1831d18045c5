import { ApplicationFailure } from '@temporalio/workflow';
import type { CursorProbe } from '../schemas/child-inputs.js';

/** What a page activity reports about its cursor (see activities/page-step.ts). */
export interface PageCursorReport {
  /** A short hash of the next cursor (null when the scope is done). */
  readonly cursorTag: string | null;
  /** The scope was restarted from its first page because the API rejected the cursor. */
  readonly restarted: boolean;
}

/**
 * The workflow half of the page path's guards, per scope:
 *  - loop guard (style rule 7): a source that hands out a cursor this scope was already given would be read
 *    forever (the activity catches the same cursor twice in a row; this catches longer cycles): within one
 *    execution every cursor is remembered; across continue-as-new a probe (CursorProbe) is carried. The
 *    number of pages a scope may take at all is bounded by its checkpoint (activities/sync-page.ts), which
 *    spans runs too;
 *  - a rejected cursor restarts a scope at most once per run: after that the activity fails the window.
 */
export function pageGuard(stream: string, carried: readonly CursorProbe[] = []) {
  const seen = new Map<string, Set<string>>();
  const last = new Map<string, string>();
  const restarted = new Set<string>();
  const probes = new Map(carried.map((p) => [p.scope, p]));
  const loop = (scope: string, tag: string, after: number) =>
    ApplicationFailure.nonRetryable(
      `${stream} ${scope}: the API returned a cursor it had already returned for this scope (cursor #${tag}, after ${after} pages); the window stops instead of reading the same pages forever`,
      'CursorLoop',
    );
  return {
    /** The tag of the last cursor a page of `scope` reported in this execution (none: not read yet, or done). */
    lastCursorTag: (scope: string): string | undefined => last.get(scope),
    /** Whether the next page of `scope` may restart the scope on a rejected cursor. */
    allowRestart: (scope: string): boolean => !restarted.has(scope),
    /** Scopes whose cursors the guard holds: those begun and not done (as many as are read at once). */
    scopesHeld: (): number => new Set([...seen.keys(), ...last.keys()]).size,
    /**
     * What a continue-as-new carries of the scopes not done (Brent's cycle detection): per scope the tag of
     * the cursor given at its last power-of-two page, and its pages so far. Constant in size whatever the
     * scope's length, where a set of every cursor would grow with it; a cycle of any length is caught
     * within about twice its length plus the pages before it.
     */
    probes: (): CursorProbe[] => [...probes.values()],
    /** Records a page's cursor; throws (failing the window) when the cursor came round again. */
    observe(scope: string, page: PageCursorReport): void {
      if (page.restarted) {
        restarted.add(scope);
        seen.delete(scope);
        probes.delete(scope);
      }
      if (page.cursorTag === null) {
        // The scope is done: nothing of it is kept. The threads workflow reads a scope per ticket, thousands
        // per execution; what it keeps must not grow with them. A scope read again later in the
        // execution starts from its first page, so its old cursors would come round again by right. (Only
        // `restarted` stays: one restart per scope and run, and it holds only the scopes that restarted.)
        last.delete(scope);
        seen.delete(scope);
        probes.delete(scope);
        return;
      }
      last.set(scope, page.cursorTag);
      const tags = seen.get(scope) ?? new Set<string>();
      if (tags.has(page.cursorTag)) throw loop(scope, page.cursorTag, tags.size);
      tags.add(page.cursorTag);
      seen.set(scope, tags);
      // Within one execution the set above sees every repeat first; the probe catches those across one.
      const probe = probes.get(scope);
      const pages = (probe?.pages ?? 0) + 1;
      if (probe?.tag === page.cursorTag) throw loop(scope, page.cursorTag, pages - 1);
      const powerOfTwo = (pages & (pages - 1)) === 0;
      probes.set(scope, { scope, tag: powerOfTwo || !probe ? page.cursorTag : probe.tag, pages });
    },
  };
}

export type PageGuard = ReturnType<typeof pageGuard>;
