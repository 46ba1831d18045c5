import { WorkflowIdReusePolicy } from '@temporalio/client';
import { ExportPass, type WindowInput } from '../../schemas/sync.js';
import {
  SyncRunIdKey,
  SyncStreamKey,
  WindowEndKey,
  WindowStartKey,
} from '../../workflows/search-attributes.js';
import { buildDependencies } from '../compose.js';
import { analyticsQueueOf } from '../config.js';
import { temporalFor } from '../embedded.js';
import { failureMessage } from '../run-sync.js';
import { startLocalWorkers } from '../workers.js';
import { reportFailure, withConfig } from './context.js';

/** `<pass>/<from>/<before>` → its parts, or null when the id is not an export window's. */
export function parseWindowId(id: string): { pass: ExportPass; from: string; before: string } | null {
  const match = /^([a-z_.]+)\/([^/]+)\/([^/]+)$/.exec(id);
  if (!match) return null;
  const pass = ExportPass.safeParse(match[1]);
  if (!pass.success || !Number.isFinite(Date.parse(match[2]!)) || !Number.isFinite(Date.parse(match[3]!)))
    return null;
  return { pass: pass.data, from: match[2]!, before: match[3]! };
}

/**
 * `replay <workflow-id>`: runs an export window again under the same workflow id (a new run of it), from
 * its start, without moving the high-water mark. Upserts by id make it idempotent.
 */
export function replayCommand(
  workflowId: string,
  opts: { config?: string; localWorker: boolean },
): Promise<number> {
  const window = parseWindowId(workflowId);
  if (!window) {
    process.stderr.write(
      `usage error: "${workflowId}" is not an export window id (<pass>/<from>/<before>, pass one of ${ExportPass.options.join(', ')})\n`,
    );
    return Promise.resolve(2);
  }
  return withConfig(opts, async (config, logger) => {
    const temporal = await temporalFor(config, logger, { embedIfUnset: true });
    const deps = await buildDependencies(config, logger);
    const workers = opts.localWorker ? await startLocalWorkers(temporal, config, deps.activities) : undefined;
    const runId = `replay-${new Date().toISOString()}`;
    const startedAt = new Date().toISOString();
    try {
      await deps.destination.prepare();
      const input: WindowInput = {
        runId,
        pass: window.pass,
        windowStart: window.from,
        windowEnd: window.before,
        pageSize: config.SYNC_PAGE_SIZE,
        analyticsTaskQueue: analyticsQueueOf(config.TEMPORAL_TASK_QUEUE),
        includeComments: config.SYNC_CSAT_COMMENTS,
        advanceHighWaterMark: false,
      };
      const record = {
        run_id: runId,
        parent_run_id: null,
        workflow_id: workflowId,
        stream: window.pass === 'agent_sessions' ? 'agent_sessions' : 'csat_surveys',
        window_start: window.from,
        window_end: window.before,
        mode: 'replay' as const,
        started_at: startedAt,
      };
      try {
        const counts = await temporal.client.workflow.execute('exportWindowWorkflow', {
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          workflowId,
          args: [input],
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
          typedSearchAttributes: [
            { key: SyncStreamKey, value: record.stream },
            { key: WindowStartKey, value: new Date(window.from) },
            { key: WindowEndKey, value: new Date(window.before) },
            { key: SyncRunIdKey, value: runId },
          ],
        });
        const c = counts as { pages: number; rows: number };
        await deps.destination.recordRun({
          ...record,
          status: 'succeeded',
          finished_at: new Date().toISOString(),
          pages: c.pages,
          rows_written: c.rows,
          requests: c.pages,
          error: null,
        });
        process.stdout.write(`${JSON.stringify({ status: 'succeeded', workflow_id: workflowId, ...c })}\n`);
        return 0;
      } catch (err) {
        const message = failureMessage(err);
        await deps.destination.recordRun({
          ...record,
          status: 'failed',
          finished_at: new Date().toISOString(),
          pages: 0,
          rows_written: 0,
          requests: 0,
          error: message,
        });
        return reportFailure(new Error(`${workflowId}: ${message}`));
      }
    } finally {
      await workers?.shutdown();
      await deps.close();
      await temporal.close();
    }
  });
}
