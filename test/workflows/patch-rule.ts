import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A `patched(…)` or `deprecatePatch(…)` call in workflow code, as the versioning rule sees it. */
export interface PatchCall {
  readonly file: string;
  readonly line: number;
  readonly call: 'patched' | 'deprecatePatch';
  /** The id when it is a string literal; null when it is anything else (which the rule refuses). */
  readonly id: string | null;
}

const CALL = /\b(patched|deprecatePatch)\s*\(\s*(?:(['"`])([^'"`]*)\2\s*\)|)/g;

/** Every patch call in one source text (`file` names it in the result). */
export function patchCallsIn(file: string, text: string): PatchCall[] {
  const calls: PatchCall[] = [];
  for (const m of text.matchAll(CALL)) {
    const before = text.slice(0, m.index);
    // An import of the function, or its mention in a comment, is not a call.
    const lineStart = before.lastIndexOf('\n') + 1;
    const lineEnd = text.indexOf('\n', m.index);
    const lineText = text.slice(lineStart, lineEnd === -1 ? undefined : lineEnd);
    if (/^\s*(\*|\/\/)/.test(lineText) || /^\s*import\b|^\s*(patched|deprecatePatch),?\s*$/.test(lineText))
      continue;
    calls.push({
      file,
      line: before.split('\n').length,
      call: m[1] as PatchCall['call'],
      id: m[3] ?? null,
    });
  }
  return calls;
}

/** Every patch call in the `.ts` files under `dir`. */
export function patchCallsUnder(dir: string): PatchCall[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .sort()
    .flatMap((f) => patchCallsIn(join(dir, f), readFileSync(join(dir, f), 'utf8')));
}

/**
 * What breaks the rule (workflows/README.md): a patch id that is not a literal (the rule cannot follow it),
 * a live id with no `before-<id>` history folder (nothing proves the old path replays), a `before-<id>`
 * folder whose patch is gone (it goes with the patch, in the same change).
 */
export function patchRuleProblems(calls: readonly PatchCall[], folders: readonly string[]): string[] {
  const problems: string[] = [];
  const live = new Set<string>();
  for (const c of calls) {
    if (c.id === null) problems.push(`${c.file}:${c.line}: ${c.call}() takes a string literal id`);
    else live.add(c.id);
  }
  const before = new Set(
    folders.filter((f) => f.startsWith('before-')).map((f) => f.slice('before-'.length)),
  );
  for (const id of [...live].sort())
    if (!before.has(id))
      problems.push(
        `patch '${id}' has no test/workflows/histories/before-${id}/ (record it on the code before the patch: npm run record-histories -- --before ${id})`,
      );
  for (const id of [...before].sort())
    if (!live.has(id))
      problems.push(`test/workflows/histories/before-${id}/ names no live patch: delete it with its patch`);
  return problems;
}
