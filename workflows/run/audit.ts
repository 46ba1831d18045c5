import { executeChild, ParentClosePolicy, WorkflowIdReusePolicy, workflowInfo } from '@temporalio/workflow';
import { AUDIT_TABLE_NAMES, AUDIT_TABLES, type AuditSummary } from '../../schemas/audit.js';
import { RUN_PRIORITY } from '../../schemas/run-input.js';
import { auditWorkflow } from '../audit.js';
import { warnIfFails } from '../failures.js';
import { SyncRunIdKey } from '../search-attributes.js';
import type { RunContext } from './context.js';

/**
 * The audit of a run, once every lane has settled — so it never delays the run's own streams —
 * and only by the runs that keep the warehouse current: a child workflow `audit/<run id>` that spends the
 * run's audit budget (SYNC_AUDIT_SHARE) re-reading a sample of the tables this run synced successfully.
 * Its failure is a warning in the summary, never a failed run. Undefined when the run has no audit
 * (no budget, or a budget of 0 requests).
 */
export async function auditAfterRun(ctx: RunContext): Promise<AuditSummary | undefined> {
  const { settings, mode, progress, runId } = ctx;
  const budget = settings.auditRequests;
  if (!budget || Object.values(budget).every((n) => n === 0)) return undefined;
  if (mode !== 'incremental' && mode !== 'full_refresh') return undefined;
  const tables = AUDIT_TABLE_NAMES.filter((t) =>
    AUDIT_TABLES[t].streams.every((s) => progress.streams[s]?.status === 'succeeded'),
  );
  if (tables.length === 0) return undefined;
  return warnIfFails(
    'audit',
    () =>
      executeChild(auditWorkflow, {
        workflowId: `audit/${runId}`,
        taskQueue: workflowInfo().taskQueue,
        workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
        parentClosePolicy: ParentClosePolicy.TERMINATE,
        priority: { priorityKey: RUN_PRIORITY[mode] },
        typedSearchAttributes: [{ key: SyncRunIdKey, value: runId }],
        args: [
          {
            runId,
            tables,
            rowsPerTable: null,
            requests: budget,
            includeComments: settings.csatIncludeComments,
          },
        ],
      }),
    (error) => ({
      sampled: 0,
      differs: 0,
      changed_since: 0,
      healed: 0,
      bound: 1,
      requests: {},
      budget,
      tables: {},
      error,
    }),
  );
}
