import { type ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

/** The message of what a workflow caught: an Error's message, anything else as text. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The innermost cause's message: for a failed activity or child, the API's code and request id (an
 * `ActivityFailure` or `ChildWorkflowFailure` only says which activity or child failed).
 */
export function innermostMessage(err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause) cause = cause.cause;
  return messageOf(cause);
}

/** The failure type of a destination's errors (connectors/errors.ts `DestinationError`, its `name`). */
export const WAREHOUSE_FAILURE_TYPE = 'DestinationError';

/** Whether an activity failed because the warehouse did (not the source, nor the data). */
export function isWarehouseFailure(err: ActivityFailure): boolean {
  return err.cause instanceof ApplicationFailure && err.cause.type === WAREHOUSE_FAILURE_TYPE;
}
