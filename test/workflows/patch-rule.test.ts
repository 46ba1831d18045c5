import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { recordedScenarios } from './history-files.js';
import { patchCallsIn, patchCallsUnder, patchRuleProblems } from './patch-rule.js';

const WORKFLOWS_DIR = fileURLToPath(new URL('../../workflows/', import.meta.url));

describe('the versioning rule (workflows/README.md)', () => {
  it('holds for the workflows as they are: every patch has its before-<id> histories, every such folder its patch', () => {
    expect(patchRuleProblems(patchCallsUnder(WORKFLOWS_DIR), recordedScenarios())).toEqual([]);
  });

  it('finds patch calls, not their imports or mentions in comments', () => {
    const text = [
      "import { deprecatePatch, patched } from '@temporalio/workflow';",
      "// patched('in-a-comment') is not a call",
      "if (patched('reconcile-after-run')) await reconcile();",
      '  deprecatePatch("old-step");',
      'if (patched(SOME_CONSTANT)) {}',
    ].join('\n');
    expect(patchCallsIn('w.ts', text)).toEqual([
      { file: 'w.ts', line: 3, call: 'patched', id: 'reconcile-after-run' },
      { file: 'w.ts', line: 4, call: 'deprecatePatch', id: 'old-step' },
      { file: 'w.ts', line: 5, call: 'patched', id: null },
    ]);
  });

  it('fails a patch with no history recorded before it, a folder left behind, and an id it cannot follow', () => {
    const calls = [
      { file: 'a.ts', line: 1, call: 'patched' as const, id: 'new-step' },
      { file: 'b.ts', line: 2, call: 'deprecatePatch' as const, id: 'kept-step' },
      { file: 'c.ts', line: 3, call: 'patched' as const, id: null },
    ];
    const folders = ['initial-sync', 'before-kept-step', 'before-removed-step'];
    expect(patchRuleProblems(calls, folders)).toEqual([
      'c.ts:3: patched() takes a string literal id',
      "patch 'new-step' has no test/workflows/histories/before-new-step/ (record it on the code before the patch: npm run record-histories -- --before new-step)",
      'test/workflows/histories/before-removed-step/ names no live patch: delete it with its patch',
    ]);
    expect(patchRuleProblems(calls.slice(0, 2), [...folders.slice(0, 2), 'before-new-step'])).toEqual([]);
  });
});
