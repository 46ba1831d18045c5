import { type ActivityOptions, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import type { StreamRouteClass } from '../schemas/streams.js';
import { classTaskQueue } from '../schemas/workflow-names.js';

/**
 * Activity options in one place. API errors that retrying cannot fix (401, 403, 404, validation, schema
 * violations) are thrown non-retryable by the activities; a 429 arrives as a `RateLimited` failure whose
 * `nextRetryDelay` (Retry-After) replaces the backoff.
 *
 * A page activity commits page by page and a retry resumes from the last committed page, so Temporal's
 * backoff only climbs for a page that keeps failing: a real outage. It then retries without an attempt limit, backing off to a
 * minute, for the run's patience (SYNC_SOURCE_PATIENCE, default hours) before the window fails.
 */
const DEFAULT_PATIENCE_MS = 6 * 60 * 60 * 1000;

const retry: ActivityOptions['retry'] = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '1 minute',
  // No attempt limit (the SDK's default when unset): scheduleToCloseTimeout (the patience) bounds it.
};

const base = (patienceMs = DEFAULT_PATIENCE_MS): ActivityOptions => ({
  startToCloseTimeout: '3 minutes',
  scheduleToCloseTimeout: patienceMs,
  // A killed worker is noticed within the heartbeat timeout, not after startToClose; every activity beats
  // every 3 s (activities/heartbeat.ts), so 10 s tolerates a couple of missed beats.
  heartbeatTimeout: '10 seconds',
  retry,
});

/** Bookkeeping (plan, checkpoints, run records): destination only, on the workflow's own task queue. */
export const bookkeeping = proxyActivities<Activities>({
  ...base(),
  startToCloseTimeout: '1 minute',
  retry: { ...retry, maximumAttempts: 30 },
});

/**
 * The start of a run (activities/begin-run.ts): the destination prepared (its DDL, on a first run), the run
 * recorded and planned in one activity, given the time of several bookkeeping steps.
 */
export const runStart = proxyActivities<Activities>({
  ...base(),
  startToCloseTimeout: '5 minutes',
  retry: { ...retry, maximumAttempts: 30 },
});

/**
 * The flush of staged rows (activities/bookkeeping.ts flushStaged): warehouse work that may take minutes on
 * a large backlog, retried until the warehouse answers (an outage of BigQuery waits, it does not fail the
 * window), for the default patience.
 */
export const flushing = proxyActivities<Activities>({
  ...base(),
  startToCloseTimeout: '15 minutes',
});

/**
 * A page activity reads a run of pages (activities/sync-page.ts), ending between pages after PAGE_RUN_MS;
 * one page may wait for its slot of a paced budget besides. A killed worker is still noticed within the
 * heartbeat timeout.
 */
const PAGE_RUN_TIMEOUT = '10 minutes';

/**
 * Activities that make requests of one route class, on that class's task queue (`<queue>-<class>`): the
 * class's own activity slots on every worker; the key's budget workflow paces their requests. Call inside a
 * workflow.
 */
export function classActivities(
  routeClass: StreamRouteClass,
  options: { patienceMs?: number | undefined } = {},
) {
  return proxyActivities<Activities>({
    ...base(options.patienceMs),
    startToCloseTimeout: PAGE_RUN_TIMEOUT,
    taskQueue: classTaskQueue(workflowInfo().taskQueue, routeClass),
  });
}

/**
 * Pages that give up after a few minutes of retries: thread pages, so that one thread the source keeps
 * failing is set aside (retried by the next run) instead of holding its lane for hours; the threads
 * workflow tells an outage (every thread failing) from that and then waits patiently (classActivities).
 */
export function impatientClassActivities(routeClass: StreamRouteClass) {
  return proxyActivities<Activities>({
    ...base(),
    retry: { ...retry, maximumAttempts: 6 },
    taskQueue: classTaskQueue(workflowInfo().taskQueue, routeClass),
  });
}

/**
 * Activities that loop over a run of pages (activities/thread-batch.ts) on a class's queue: as patient as
 * classActivities, with room for many requests in one attempt (the budget may pace them); a killed worker
 * is still noticed within the heartbeat timeout, and a retry resumes from the last heartbeat.
 */
export function batchClassActivities(
  routeClass: StreamRouteClass,
  options: { patienceMs?: number | undefined } = {},
) {
  return proxyActivities<Activities>({
    ...base(options.patienceMs),
    startToCloseTimeout: '30 minutes',
    taskQueue: classTaskQueue(workflowInfo().taskQueue, routeClass),
  });
}

/** Analytics-class activities on an explicitly named queue (a window's input names it: WindowInput.analyticsTaskQueue). */
export function analyticsActivities(taskQueue: string, options: { patienceMs?: number | undefined } = {}) {
  return proxyActivities<Activities>({
    ...base(options.patienceMs),
    startToCloseTimeout: PAGE_RUN_TIMEOUT,
    taskQueue,
  });
}

/**
 * The reconciliation after a run (one analytics request): few attempts, since it is a check whose failure
 * is only a warning and must not hold the end of the run for long.
 */
export function reconcileActivities(taskQueue: string) {
  return proxyActivities<Activities>({
    ...base(),
    scheduleToCloseTimeout: '10 minutes',
    taskQueue,
    retry: { ...retry, maximumAttempts: 3 },
  });
}

/**
 * The audit's units (one request each) on their class's queue: a few attempts, since the audit is a check
 * whose failure is only a warning and must not hold the end of a run for long.
 */
export function auditActivities(routeClass: StreamRouteClass) {
  return proxyActivities<Activities>({
    ...base(),
    scheduleToCloseTimeout: '10 minutes',
    taskQueue: classTaskQueue(workflowInfo().taskQueue, routeClass),
    retry: { ...retry, maximumAttempts: 5 },
  });
}
