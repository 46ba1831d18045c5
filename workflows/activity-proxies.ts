import { type ActivityOptions, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';

/**
 * Activity options in one place. Pages are retried with backoff; a 429 arrives as a `RateLimited`
 * failure whose `nextRetryDelay` (from Retry-After) replaces the backoff; API errors that retrying cannot
 * fix (401, 403, 404, validation, schema violations) are thrown non-retryable by the activities.
 */
const retry: ActivityOptions['retry'] = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '1 minute',
  maximumAttempts: 30,
};

const base: ActivityOptions = {
  startToCloseTimeout: '3 minutes',
  // A killed worker is noticed within the heartbeat timeout, not after startToClose; every activity beats
  // every 3 s (activities/heartbeat.ts), so 10 s tolerates a couple of missed beats.
  heartbeatTimeout: '10 seconds',
  retry,
};

/** Activities of the list/detail/write classes, paced in-process by the rate governor. */
export const pageActivities = proxyActivities<Activities>(base);

/** Bookkeeping (plan, checkpoints, run records): destination only. */
export const bookkeeping = proxyActivities<Activities>({ ...base, startToCloseTimeout: '1 minute' });

/** Analytics-class activities on their own task queue, whose rate the Temporal server enforces. */
export function analyticsActivities(taskQueue: string) {
  return proxyActivities<Activities>({ ...base, taskQueue });
}

/**
 * The reconciliation after a run (one analytics request): few attempts, since it is a check whose failure
 * is only a warning and must not hold the end of the run for long.
 */
export function reconcileActivities(taskQueue: string) {
  return proxyActivities<Activities>({
    ...base,
    taskQueue,
    retry: { ...retry, maximumAttempts: 3 },
  });
}
