import {
  advanceHighWaterMark,
  beginScope,
  deletionCutoff,
  markUnseenDeleted,
  planRun,
  prepareDestination,
  recordRun,
} from './bookkeeping.js';
import type { ActivityDeps } from './deps.js';
import { syncExportPage } from './exports.js';
import { mapFailures } from './failures.js';
import { withHeartbeat } from './heartbeat.js';
import { reconcile } from './reconcile.js';
import { syncReferencePage } from './reference.js';
import { syncReportSnapshot } from './report-snapshots.js';
import {
  finishThreads,
  listQueuedThreads,
  markThreadFailed,
  queueThreadsToReverify,
  requeueUnsettledThreads,
  syncThreadPage,
} from './threads.js';
import { beginSweep, finishSweep, finishTickets, syncTicketsPage } from './tickets.js';

export type { RunPlan } from './bookkeeping.js';
export type { ActivityDeps } from './deps.js';

/**
 * Every activity, bound to dependencies built once by the worker. Each page activity fetches one page,
 * writes it with its checkpoint in one destination transaction and returns only counts; failures are
 * mapped for Temporal (429 → retry at Retry-After; permanent API errors → non-retryable with code and
 * request_id).
 */
export function createActivities(deps: ActivityDeps) {
  const activities = {
    prepareDestination: prepareDestination(deps),
    planRun: planRun(deps),
    recordRun: recordRun(deps),
    beginScope: beginScope(deps),
    advanceHighWaterMark: advanceHighWaterMark(deps),
    deletionCutoff: deletionCutoff(deps),
    markUnseenDeleted: markUnseenDeleted(deps),
    syncReferencePage: syncReferencePage(deps),
    syncTicketsPage: syncTicketsPage(deps),
    beginSweep: beginSweep(deps),
    finishSweep: finishSweep(deps),
    finishTickets: finishTickets(deps),
    syncThreadPage: syncThreadPage(deps),
    listQueuedThreads: listQueuedThreads(deps),
    markThreadFailed: markThreadFailed(deps),
    queueThreadsToReverify: queueThreadsToReverify(deps),
    requeueUnsettledThreads: requeueUnsettledThreads(deps),
    finishThreads: finishThreads(deps),
    syncExportPage: syncExportPage(deps),
    syncReportSnapshot: syncReportSnapshot(deps),
    reconcile: reconcile(deps),
  };
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      heartbeating(mapFailures(fn as (...a: unknown[]) => Promise<unknown>)),
    ]),
  ) as typeof activities;
}

export type Activities = ReturnType<typeof createActivities>;

/**
 * Every activity heartbeats while it runs: the proxies set a heartbeat timeout so that a killed worker's
 * activities are retried soon, and an activity that never heartbeats would time out after it even when its
 * worker is alive (a page waiting for the rate governor, a slow transaction).
 */
function heartbeating<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return (...args: A) => withHeartbeat(() => fn(...args));
}
