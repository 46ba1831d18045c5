import { Context } from '@temporalio/activity';
import { countRequests } from '../connectors/support-api/index.js';
import { AUDIT_TABLES } from '../schemas/audit.js';
import { ALL_STREAMS, STREAMS, type StreamKind, type StreamRouteClass } from '../schemas/streams.js';
import { finishAudit, planAudit } from './audit/plan.js';
import { auditThread, auditTicket, auditWindow } from './audit/units.js';
import { beginRun } from './begin-run.js';
import {
  advanceHighWaterMark,
  beginWindow,
  finishWindow,
  flushStaged,
  markUnseenDeleted,
  planRun,
  recordRun,
  succeededWindows,
} from './bookkeeping.js';
import type { ActivityDeps } from './deps.js';
import { mapFailures } from './failures.js';
import { withHeartbeat } from './heartbeat.js';
import { missingData } from './missing-data.js';
import { syncExportPages, syncReferencePages, syncThreadPage } from './page-activities.js';
import { reconcile } from './reconcile.js';
import { readReportAccess } from './report-access.js';
import { syncReportSnapshot } from './report-snapshots.js';
import { schemaDriftAfterRun } from './schema-drift.js';
import { syncThreadBatch } from './thread-batch.js';
import {
  finishThreads,
  listQueuedThreadCheckpoints,
  markThreadFailed,
  queueThreadsToReverify,
} from './threads.js';
import { beginSweep, finishSweep, finishTickets, syncTicketsPages } from './tickets.js';

export type { RunPlan } from './bookkeeping.js';
export type { ActivityDeps } from './deps.js';

/**
 * Every activity, bound to dependencies built once by the worker. Each page activity fetches a run of pages
 * of one scope, writes each with its checkpoint in one destination transaction and returns only counts; failures are
 * mapped for Temporal (429 → retry at Retry-After; permanent API errors → non-retryable with code and
 * request_id).
 */
export function createActivities(deps: ActivityDeps) {
  const activities = {
    beginRun: beginRun(deps),
    planRun: planRun(deps),
    recordRun: recordRun(deps),
    flushStaged: flushStaged(deps),
    missingData: missingData(deps),
    succeededWindows: succeededWindows(deps),
    beginWindow: beginWindow(deps),
    finishWindow: finishWindow(deps),
    advanceHighWaterMark: advanceHighWaterMark(deps),
    markUnseenDeleted: markUnseenDeleted(deps),
    syncReferencePages: syncReferencePages(deps),
    syncTicketsPages: syncTicketsPages(deps),
    beginSweep: beginSweep(deps),
    finishSweep: finishSweep(deps),
    finishTickets: finishTickets(deps),
    syncThreadPage: syncThreadPage(deps),
    syncThreadBatch: syncThreadBatch(deps),
    listQueuedThreadCheckpoints: listQueuedThreadCheckpoints(deps),
    markThreadFailed: markThreadFailed(deps),
    queueThreadsToReverify: queueThreadsToReverify(deps),
    finishThreads: finishThreads(deps),
    syncExportPages: syncExportPages(deps),
    syncReportSnapshot: syncReportSnapshot(deps),
    reconcile: reconcile(deps),
    readReportAccess: readReportAccess(deps),
    schemaDriftAfterRun: schemaDriftAfterRun(deps),
    planAudit: planAudit(deps),
    finishAudit: finishAudit(deps),
    auditTicket: auditTicket(deps),
    auditThread: auditThread(deps),
    auditWindow: auditWindow(deps),
  };
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      heartbeating(mapFailures(fn as (...a: unknown[]) => Promise<unknown>)),
    ]),
  ) as Counted<typeof activities>;
}

/** Each activity's object result also says how many HTTP requests it cost (see `heartbeating`). */
type Counted<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R>
    ? (
        ...args: A
      ) => Promise<R extends readonly unknown[] ? R : R extends object ? R & { requests: number } : R>
    : T[K];
};

export type Activities = ReturnType<typeof createActivities>;

/** The page activity of each kind of stream: what its workflow schedules on the stream's class queue. */
const PAGE_ACTIVITY: Readonly<Record<StreamKind, keyof Activities>> = {
  reference: 'syncReferencePages',
  tickets: 'syncTicketsPages',
  threads: 'syncThreadPage',
  export: 'syncExportPages',
  report: 'syncReportSnapshot',
};

/** The audit's unit activity of each kind of audited table (schemas/audit.ts): one request each. */
const AUDIT_UNIT_ACTIVITY = {
  ticket: 'auditTicket',
  thread: 'auditThread',
  window: 'auditWindow',
} as const satisfies Record<string, keyof Activities>;

/**
 * The activities each route class's task queue serves: the page activity of every stream of that class
 * (from the registry, schemas/streams.ts), the reconciliation's one report query (analytics) and the
 * key's report access before it (`GET /me`, detail), the thread batch (detail: a run of thread pages in
 * one activity), and the audit's units (by the class of the request each makes). Every request takes its
 * slot of the key's budget in the client (connectors/support-api/fleet-slots.ts), whichever activity makes it.
 */
export function activitiesByRouteClass(
  activities: Activities,
): Record<StreamRouteClass, Partial<Activities>> {
  const byClass: Record<StreamRouteClass, Partial<Activities>> = {
    list: {},
    detail: { readReportAccess: activities.readReportAccess, syncThreadBatch: activities.syncThreadBatch },
    analytics: { reconcile: activities.reconcile },
    directory: {},
  };
  for (const stream of ALL_STREAMS) {
    const { kind, routeClass } = STREAMS[stream];
    const name = PAGE_ACTIVITY[kind];
    Object.assign(byClass[routeClass], { [name]: activities[name] });
  }
  for (const { unit, routeClass } of Object.values(AUDIT_TABLES)) {
    const name = AUDIT_UNIT_ACTIVITY[unit];
    Object.assign(byClass[routeClass], { [name]: activities[name] });
  }
  return byClass;
}

/**
 * Every activity heartbeats while it runs: the proxies set a heartbeat timeout so that a killed worker's
 * activities are retried soon, and an activity that never heartbeats would time out after it even when its
 * worker is alive (a page waiting for the rate governor, a slow transaction). The heartbeat also carries the
 * HTTP requests sent so far, so that a retried attempt starts from its earlier attempts' count: an
 * activity's result says how many requests it really cost (`requests`, retries included) for the ledger.
 */
function heartbeating<A extends unknown[], R>(fn: (...args: A) => Promise<R>): (...args: A) => Promise<R> {
  return async (...args: A) => {
    const counter = { requests: earlierAttemptsRequests() };
    const { result } = await countRequests(
      () =>
        withHeartbeat(
          () => fn(...args),
          3000,
          () => ({ requests: counter.requests }),
        ),
      counter,
    );
    if (result !== null && typeof result === 'object' && !Array.isArray(result)) {
      return { ...result, requests: counter.requests } as R;
    }
    return result;
  };
}

/** Requests sent by the failed attempts before this one (their last heartbeat), outside an activity 0. */
function earlierAttemptsRequests(): number {
  try {
    const details = Context.current().info.heartbeatDetails as { requests?: unknown } | undefined;
    return typeof details?.requests === 'number' ? details.requests : 0;
  } catch {
    return 0;
  }
}
