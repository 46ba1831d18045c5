import { continueAsNew, workflowInfo } from '@temporalio/workflow';

/**
 * Long loops (thousands of pages) continue as new before history grows large. All state lives in the
 * destination's checkpoints, so the new run starts from the same input and picks up where this one was.
 * `workflowInfo()` is a frozen copy: call it again each time.
 */
export async function continueAsNewIfSuggested<I extends object>(
  input: I,
  progress: { pages: number; rows: number; requests: number },
): Promise<void> {
  if (workflowInfo().continueAsNewSuggested) {
    await continueAsNew<(input: I) => Promise<unknown>>({
      ...input,
      carried: { pages: progress.pages, rows: progress.rows, requests: progress.requests },
    });
  }
}
