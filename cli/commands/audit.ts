import {
  AUDIT_TABLE_NAMES,
  type AuditInput,
  type AuditSummary,
  type AuditTable,
} from '../../schemas/audit.js';
import { RUN_PRIORITY } from '../../schemas/run-input.js';
import { buildDependencies } from '../../worker/compose.js';
import { failureMessage, newRunId } from '../../worker/run-sync.js';
import { startLocalWorkers } from '../../worker/workers.js';
import { SyncRunIdKey } from '../../workflows/search-attributes.js';
import { auditSummaryLine, auditTableLines } from '../display/audit.js';
import { reportFailure, withTemporal } from './context.js';
import { PreflightError, preflight } from './preflight.js';

export interface AuditOptions {
  config?: string;
  sample: number;
  table?: AuditTable;
  json?: boolean;
  localWorker: boolean;
}

/**
 * `audit --sample N [--table T]`: the audit a run ends with, on demand and without a budget cap — N rows
 * per table (or of T) re-read from the live API (at the queues' pace, at replay priority: behind scheduled
 * runs and backfills), every stored field compared, what differs healed at once and recorded in `_audit`.
 * Prints a line per table (`--json`: the summary as the last stdout line). Exit 0: nothing differed;
 * 3: rows differed (healed now, their threads or windows queued for a re-read); 1: the audit failed.
 */
export function auditCommand(opts: AuditOptions): Promise<number> {
  return withTemporal(opts, { embedIfUnset: true }, async ({ config, logger, temporal, secrets }) => {
    const deps = await buildDependencies(config, logger);
    try {
      const tables = opts.table ? [opts.table] : [...AUDIT_TABLE_NAMES];
      // Each audited table is a stream of the same name: the preflight probes those streams' routes.
      await preflight(deps, logger, config, tables);
      const workers = opts.localWorker
        ? await startLocalWorkers(temporal, config, deps, logger, secrets)
        : undefined;
      try {
        const runId = `audit-${newRunId(new Date())}`;
        const input: AuditInput = {
          runId,
          tables,
          rowsPerTable: opts.sample,
          requests: null,
          includeComments: config.SYNC_CSAT_COMMENTS,
        };
        process.stderr.write(
          `auditing ${opts.sample} rows of ${input.tables.join(', ')} against the live API (run ${runId})\n`,
        );
        const summary: AuditSummary = await temporal.client.workflow.execute('auditWorkflow', {
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          workflowId: `audit/${runId}`,
          args: [input],
          priority: { priorityKey: RUN_PRIORITY.replay },
          typedSearchAttributes: [{ key: SyncRunIdKey, value: runId }],
        });
        const lines = [...auditTableLines(summary.tables), auditSummaryLine(summary)];
        process.stdout.write(
          `${opts.json ? JSON.stringify({ run_id: runId, ...summary }) : lines.join('\n')}\n`,
        );
        if (opts.json) process.stderr.write(`${lines.join('\n')}\n`);
        return summary.error ? 1 : summary.differs > 0 ? 3 : 0;
      } finally {
        await workers?.shutdown();
      }
    } catch (err) {
      if (err instanceof PreflightError) return reportFailure(err);
      return reportFailure(new Error(`audit failed: ${failureMessage(err)}`));
    } finally {
      await deps.close();
    }
  });
}
