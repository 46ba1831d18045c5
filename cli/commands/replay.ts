import { type Client, WorkflowIdReusePolicy } from '@temporalio/client';
import type { WindowInput } from '../../schemas/child-inputs.js';
import { ExportPass, streamOfPass } from '../../schemas/streams.js';
import { windowWorkflowId, workspaceWorkflowId } from '../../schemas/workflow-names.js';
import { buildDependencies } from '../../worker/compose.js';
import { analyticsQueueOf } from '../../worker/config.js';
import { failureMessage, workspaceStartOptions } from '../../worker/run-sync.js';
import { startLocalWorkers } from '../../worker/workers.js';
import {
  SyncRunIdKey,
  SyncStreamKey,
  WindowEndKey,
  WindowStartKey,
} from '../../workflows/search-attributes.js';
import { windowLink } from '../display/failed-windows.js';
import { reportFailure, withTemporal } from './context.js';

/** `<pass>/<from>/<before>` → its parts, or null when the id is not an export window's. */
export function parseWindowId(
  id: string,
): { pass: ExportPass; from: string; before: string; workspace?: string } | null {
  const match = /^(?:([a-z][a-z0-9-]{0,39})\/)?([a-z_.]+)\/([^/]+)\/([^/]+)$/.exec(id);
  if (!match) return null;
  const pass = ExportPass.safeParse(match[2]);
  if (!pass.success || !Number.isFinite(Date.parse(match[3]!)) || !Number.isFinite(Date.parse(match[4]!)))
    return null;
  return {
    pass: pass.data,
    from: match[3]!,
    before: match[4]!,
    ...(match[1] !== undefined ? { workspace: match[1] } : {}),
  };
}

/**
 * `replay <workflow-id>` or `replay --stream <pass> --window <from>/<before>`: runs an export window again
 * under its workflow id (a new run of it), from its start, without moving the live high-water mark; upserts
 * by id make it idempotent, and the window records the new attempt in the ledger itself. A window that is
 * running is refused (wait for it, or cancel it in the UI). With `--wait` (always with a local worker) it
 * prints progress and the result; otherwise it prints where to follow the window and returns.
 */
export function replayCommand(
  workflowIdArg: string | undefined,
  opts: {
    config?: string;
    localWorker: boolean;
    stream?: string;
    window?: string;
    wait?: boolean;
    workspace?: string;
  },
): Promise<number> {
  const named = workflowIdArg ?? (opts.stream && opts.window ? `${opts.stream}/${opts.window}` : undefined);
  const window = named ? parseWindowId(named) : null;
  if (!named || !window) {
    process.stderr.write(
      `usage error: ${named ? `"${named}" is not an export window id` : 'name a window'}: replay [<workspace>/]<pass>/<from>/<before>, or --stream <pass> --window <from>/<before> (pass one of ${ExportPass.options.join(', ')})\n`,
    );
    return Promise.resolve(2);
  }
  if (window.workspace !== undefined && opts.workspace !== undefined && window.workspace !== opts.workspace) {
    process.stderr.write(
      `usage error: "${named}" is a window of workspace "${window.workspace}", not of --workspace ${opts.workspace}\n`,
    );
    return Promise.resolve(2);
  }
  // A window id of a workspace names it: the replay reads that workspace's source into its tables.
  const workspaceOpts = window.workspace !== undefined ? { ...opts, workspace: window.workspace } : opts;
  return withTemporal(
    workspaceOpts,
    { embedIfUnset: true },
    async ({ config, logger, temporal, secrets }) => {
      const workspace = config.SYNC_WORKSPACE;
      const workflowId = workspaceWorkflowId(
        workspace,
        windowWorkflowId(window.pass, window.from, window.before),
      );
      const start = workspaceStartOptions(workspace, 'replay');
      const deps = await buildDependencies(config, logger);
      const workers = opts.localWorker
        ? await startLocalWorkers(temporal, config, deps, logger, secrets)
        : undefined;
      const runId = `replay-${new Date().toISOString()}`;
      try {
        const running = await runningExecution(temporal.client, workflowId);
        if (running) {
          process.stderr.write(
            `${workflowId} is running (run ${running}): wait for it to finish, or cancel it in the Temporal UI (${windowLink(config, workflowId)}), then replay it\n`,
          );
          return 1;
        }
        await deps.destination.prepare();
        const input: WindowInput = {
          runId,
          mode: 'replay',
          pass: window.pass,
          windowStart: window.from,
          windowEnd: window.before,
          pageSize: config.SYNC_PAGE_SIZE,
          analyticsTaskQueue: analyticsQueueOf(config.TEMPORAL_TASK_QUEUE),
          includeComments: config.SYNC_CSAT_COMMENTS,
        };
        const handle = await temporal.client.workflow.start('exportWindowWorkflow', {
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          workflowId,
          args: [input],
          workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
          priority: start.priority,
          typedSearchAttributes: [
            { key: SyncStreamKey, value: streamOfPass(window.pass) },
            { key: WindowStartKey, value: new Date(window.from) },
            { key: WindowEndKey, value: new Date(window.before) },
            { key: SyncRunIdKey, value: runId },
            ...start.typedSearchAttributes,
          ],
        });
        process.stderr.write(
          `replaying ${workflowId} (run ${handle.firstExecutionRunId}): ${windowLink(config, workflowId)}\n`,
        );
        if (!opts.wait && !workers) {
          process.stdout.write(
            `${JSON.stringify({ status: 'started', workflow_id: workflowId, run_id: handle.firstExecutionRunId })}\n`,
          );
          return 0;
        }
        const timer = setInterval(async () => {
          try {
            const p = await handle.query<{ pages: number; rows: number }>('progress');
            process.stderr.write(`  ${workflowId}: ${p.pages} pages, ${p.rows} rows\n`);
          } catch {
            // not started yet
          }
        }, 2000);
        try {
          const c = (await handle.result()) as { pages: number; rows: number; requests?: number };
          process.stdout.write(`${JSON.stringify({ status: 'succeeded', workflow_id: workflowId, ...c })}\n`);
          return 0;
        } catch (err) {
          return reportFailure(new Error(`${workflowId}: ${failureMessage(err)}`));
        } finally {
          clearInterval(timer);
        }
      } finally {
        await workers?.shutdown();
        await deps.close();
      }
    },
  );
}

/** The run id of the window's execution if one is running. */
async function runningExecution(client: Client, workflowId: string): Promise<string | null> {
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return d.status.name === 'RUNNING' ? d.runId : null;
  } catch {
    return null; // never ran
  }
}
