import { continueAsNew, workflowInfo } from '@temporalio/workflow';

/**
 * Long loops (thousands of pages) continue as new before history grows large. All state lives in the
 * destination's checkpoints, so the new run starts from the same input and picks up where this one was.
 * `workflowInfo()` is a frozen copy: call it again each time.
 */
export async function continueAsNewIfSuggested<A extends unknown[]>(...args: A): Promise<void> {
  if (workflowInfo().continueAsNewSuggested) {
    await continueAsNew<(...a: A) => Promise<unknown>>(...args);
  }
}
