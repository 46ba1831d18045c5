import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import type { RunProgress, StreamCounts } from '../../schemas/run-summary.js';
import { classTaskQueue } from '../../schemas/workflow-names.js';
import { bookkeeping, flushing, reconcileActivities } from '../activity-proxies.js';
import { messageOf, warnIfFails } from '../failures.js';
import { auditAfterRun } from './audit.js';
import type { RunContext } from './context.js';

/** Days of new_tickets the reconciliation compares (one report request). */
const RECONCILE_DAYS = 14;

/**
 * The end of a run, once every lane has settled: the reconciliation (when tickets were synced), the schema
 * drift it saw first (and the custom-field view regenerated when it saw a new field), the audit (its share of
 * the spare budget), what the warehouse is missing, the run's final `_sync_runs` row; then the counts per
 * stream, or a failure naming every failed stream and window.
 */
export async function finishRun(
  ctx: RunContext,
  results: readonly PromiseSettledResult<void>[],
): Promise<Record<string, StreamCounts>> {
  const { runId, progress } = ctx;
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [messageOf(r.reason)] : []));
  const counts = countsOf(progress);
  const totals = Object.values(counts).reduce(
    (a, c) => ({ pages: a.pages + c.pages, rows: a.rows + c.rows }),
    { pages: 0, rows: 0 },
  );
  // Windows that wrote no row left their flush to the run (workflows/window-ledger.ts): one flush, whoever
  // staged, before the reads below (reconciliation, audit, items set aside) look at the tables.
  await flushing.flushStaged();
  // The checks after the streams go side by side, so the run's end costs the slowest of them, not their
  // sum: none fails the run, each writes only its own bookkeeping (the audit also heals the rows it finds
  // different, each in a transaction of its own, so a reconciliation beside it reads them before or after).
  const [reconcileRequests, , audit] = await Promise.all([
    reconcileAfterRun(ctx),
    schemaDriftAfterRun(ctx),
    auditAfterRun(ctx),
  ]);
  if (audit) progress.audit = audit;
  const auditRequests = Object.values(audit?.requests ?? {}).reduce((n, r) => n + r, 0);

  // A run that lost data never says "succeeded": items set aside and failed threads make it incomplete.
  progress.missing = await bookkeeping.missingData({ streams: ctx.input.streams });
  const missing = progress.missing.summary;
  progress.status = failures.length ? 'failed' : missing ? 'incomplete' : 'succeeded';
  await bookkeeping.recordRun({
    ...ctx.record,
    status: progress.status,
    finished_at: new Date().toISOString(),
    pages: totals.pages,
    rows_written: totals.rows,
    requests: Object.values(progress.streams).reduce(
      (n, e) => n + (e.requests ?? 0),
      reconcileRequests + auditRequests,
    ),
    error: failures.length || missing ? [...failures, ...(missing ? [missing] : [])].join('; ') : null,
  });
  if (failures.length) {
    throw ApplicationFailure.nonRetryable(
      `sync run ${runId} failed: ${failures.join('; ')}`,
      'SyncRunFailed',
    );
  }
  return counts;
}

/**
 * Schema drift (activities/schema-drift.ts): what the run saw first; a new custom field becomes a column of
 * ticket_custom_fields now. A warning when it fails, never a failed run.
 */
async function schemaDriftAfterRun(ctx: RunContext): Promise<void> {
  await warnIfFails(
    'schema drift summary',
    async () => {
      const { requests: _none, ...drift } = await bookkeeping.schemaDriftAfterRun({ runId: ctx.runId });
      ctx.progress.schemaChanges = drift;
    },
    () => undefined,
  );
}

/** The counts of every stream of the run, as its result reports them. */
function countsOf(progress: RunProgress): Record<string, StreamCounts> {
  const counts: Record<string, StreamCounts> = {};
  for (const [name, entry] of Object.entries(progress.streams)) {
    counts[name] = {
      pages: entry.pages,
      rows: entry.rows,
      windows: entry.windowsDone,
      ...(entry.requests !== undefined ? { requests: entry.requests } : {}),
    };
  }
  return counts;
}

/**
 * Reconciliation (activities/reconcile.ts): the source's own numbers against the warehouse, after every
 * stream, when this run synced tickets. Mismatches and a failing check are warnings, never a failed run.
 * The requests it sent.
 */
async function reconcileAfterRun(ctx: RunContext): Promise<number> {
  const { runId, settings, before, progress } = ctx;
  if (progress.streams['tickets']?.status !== 'succeeded') return 0;
  let requestsSent = 0;
  await warnIfFails(
    'reconciliation',
    async () => {
      // What the report API answers within (spec 4.12), so that an unlike comparison is skipped, not a
      // mismatch.
      const detailQueue = classTaskQueue(workflowInfo().taskQueue, 'detail');
      const { requests: accessRequests, ...reportAccess } = await reconcileActivities(detailQueue)
        .readReportAccess()
        .catch((err: unknown) => ({
          requests: 0,
          restricted: null,
          detail: `the key's access could not be read (${messageOf(err)})`,
        }));
      requestsSent += accessRequests;
      const { requests, ...reconciliation } = await reconcileActivities(
        settings.analyticsTaskQueue,
      ).reconcile({
        runId,
        before,
        days: RECONCILE_DAYS,
        views: progress.streams['views']?.status === 'succeeded',
        reportAccess,
      });
      progress.reconciliation = reconciliation;
      requestsSent += requests;
    },
    (error) => {
      progress.reconciliation = { equal: 0, mismatch: 0, skipped: 0, mismatches: [], error };
    },
  );
  return requestsSent;
}
