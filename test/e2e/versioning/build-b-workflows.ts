// "Build B" of test/e2e/worker-versioning.test.ts: the project's workflows, with a sync run that issues
// other commands than build A's (a timer before its first activity) and no patch. A run of build A replayed
// on this code fails with a nondeterminism error, so a run of A can only finish if it stays on A.
import { sleep } from '@temporalio/workflow';
import type { SyncRunInput } from '../../../schemas/run-input.js';
import { syncRunWorkflow as buildASyncRun } from '../../../workflows/index.js';

export * from '../../../workflows/index.js';

/** A timer first: the mark of build B in a run's history. */
export async function syncRunWorkflow(input: SyncRunInput): ReturnType<typeof buildASyncRun> {
  await sleep('10 ms');
  return buildASyncRun(input);
}
