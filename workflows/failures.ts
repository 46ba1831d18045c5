import { ActivityFailure, ApplicationFailure, log, TimeoutFailure } from '@temporalio/workflow';

/** The message of what a workflow caught: an Error's message, anything else as text. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * The innermost cause's message: for a failed activity or child, the API's code and request id (an
 * `ActivityFailure` or `ChildWorkflowFailure` only says which activity or child failed). A timeout says
 * little alone ("Activity task timed out"): it is named with its activity and every timeout on the way
 * (a schedule-to-close over a start-to-close one), so on-call can tell a slow warehouse from a dead worker.
 */
export function innermostMessage(err: unknown): string {
  let cause: unknown = err;
  let activity: string | undefined;
  const timeouts: string[] = [];
  for (;;) {
    if (cause instanceof ActivityFailure && cause.activityType) activity = cause.activityType;
    if (cause instanceof TimeoutFailure && cause.timeoutType) timeouts.push(cause.timeoutType);
    if (!(cause instanceof Error && cause.cause)) break;
    cause = cause.cause;
  }
  const message = messageOf(cause);
  if (!(cause instanceof TimeoutFailure)) return message;
  const how = timeouts.length > 0 ? ` (${timeouts.join(' after ')})` : '';
  return `${activity ?? 'an activity'}: ${message}${how}`;
}

/** The failure type of a destination's errors (connectors/errors.ts `DestinationError`, its `name`). */
export const WAREHOUSE_FAILURE_TYPE = 'DestinationError';

/** Whether an activity failed because the warehouse did (not the source, nor the data). */
export function isWarehouseFailure(err: ActivityFailure): boolean {
  return err.cause instanceof ApplicationFailure && err.cause.type === WAREHOUSE_FAILURE_TYPE;
}

/**
 * A step after the run's streams whose failure is a warning, never a failed run (the reconciliation, the
 * schema drift summary, the audit): its result, or, when it fails, `fallback` of the error's message,
 * logged as `<what> failed (the run is not affected)`.
 */
export async function warnIfFails<T>(
  what: string,
  step: () => Promise<T>,
  fallback: (error: string) => T,
): Promise<T> {
  try {
    return await step();
  } catch (err) {
    log.warn(`${what} failed (the run is not affected)`, { error: messageOf(err) });
    return fallback(messageOf(err));
  }
}
