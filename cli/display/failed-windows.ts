import type { Config } from '../../schemas/config.js';
import { decodeThreadFailure } from '../../schemas/state-key.js';
import { ExportPass } from '../../schemas/streams.js';
import type { SyncRunRecord } from '../../schemas/warehouse.js';
import { isReadByTheRun } from '../../schemas/workflow-names.js';
import { DEFAULT_WORKSPACE } from '../../schemas/workspaces.js';

export interface FailedWindow {
  workflow_id: string;
  stream: string | null;
  pass: string;
  window_start: string | null;
  window_end: string | null;
  /** The API's HTTP status and code, when the failure was an API error. */
  http_status: number | null;
  code: string | null;
  request_id: string | null;
  attempts: number;
  failed_at: string | null;
  error: string;
  ui_url: string;
  replay: string | null;
}

/** The pass of a window's workflow id (`[<workspace>/]<pass>/<from>/<before>`) of `workspace`. */
const passOf = (workflowId: string, workspace: string) => {
  const own = workspace !== DEFAULT_WORKSPACE && workflowId.startsWith(`${workspace}/`);
  const id = own ? workflowId.slice(workspace.length + 1) : workflowId;
  return id.split('/')[0] ?? id;
};
const ms = (t: string | null) => (t === null ? Number.NaN : Date.parse(t));

/**
 * The failed windows that nothing has covered since, from the ledger: a window whose latest attempt failed
 * and whose range no later succeeded window of the same pass contains. For each: the API's code and request
 * id (parsed from the error the window recorded), how many attempts it had, when it failed, its page in the
 * Temporal UI (its run's, for a window the run read itself) and the command that replays it (export windows).
 */
export function uncoveredFailures(
  runs: readonly SyncRunRecord[],
  config: Config,
  /** The `--config` file a replay needs to reach this deployment (the running demo's), if any. */
  configFile?: string,
): FailedWindow[] {
  const workspace = config.SYNC_WORKSPACE;
  const windows = runs.filter((r) => r.parent_run_id !== null && decodeThreadFailure(r) === null);
  const byId = new Map<string, SyncRunRecord[]>();
  for (const r of windows) byId.set(r.workflow_id, [...(byId.get(r.workflow_id) ?? []), r]);
  const out: FailedWindow[] = [];
  for (const [workflowId, attempts] of byId) {
    const latest = [...attempts].sort((a, b) => ms(b.started_at) - ms(a.started_at))[0]!;
    if (latest.status !== 'failed') continue;
    const covered = windows.some(
      (w) =>
        w.status === 'succeeded' &&
        passOf(w.workflow_id, workspace) === passOf(workflowId, workspace) &&
        ms(w.started_at) > ms(latest.started_at) &&
        w.window_start !== null &&
        w.window_end !== null &&
        latest.window_start !== null &&
        latest.window_end !== null &&
        ms(w.window_start) <= ms(latest.window_start) &&
        ms(w.window_end) >= ms(latest.window_end),
    );
    if (covered) continue;
    const error = latest.error ?? '';
    const api = /HTTP (\d{3}) ([A-Z_]+)/.exec(error);
    const pass = passOf(workflowId, workspace);
    const exportWindow = ExportPass.safeParse(pass).success;
    // A window its run read itself has no workflow of its own: its activities are in the run's history.
    const readByRun = latest.stream !== null && isReadByTheRun(latest.stream);
    const run = readByRun
      ? runs.find((r) => r.parent_run_id === null && r.run_id === latest.parent_run_id)
      : undefined;
    out.push({
      workflow_id: workflowId,
      stream: latest.stream,
      pass,
      window_start: latest.window_start,
      window_end: latest.window_end,
      http_status: api ? Number(api[1]) : null,
      code: api?.[2] ?? (/field \w+/.test(error) ? 'SCHEMA_VIOLATION' : null),
      request_id: /request_id ([\w.-]+)/.exec(error)?.[1] ?? null,
      attempts: attempts.length,
      failed_at: latest.finished_at,
      error,
      ui_url: windowLink(config, run?.workflow_id ?? workflowId),
      replay: exportWindow
        ? `npm run cli -- replay '${workflowId}' --wait${configFile ? ` --config ${configFile}` : ''}`
        : null,
    });
  }
  return out.sort((a, b) => ms(b.failed_at) - ms(a.failed_at));
}

/** The window's page in the Temporal UI. */
export function windowLink(config: Config, workflowId: string): string {
  return `${config.TEMPORAL_UI_URL.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(config.TEMPORAL_NAMESPACE ?? 'default')}/workflows/${encodeURIComponent(workflowId)}`;
}

/** Lines for a person: what failed, why, where to look, how to re-run it. */
export function failedWindowLines(failures: readonly FailedWindow[]): string[] {
  if (failures.length === 0) return ['No failed window left uncovered.'];
  const lines = [`Failed windows not covered since (${failures.length}):`];
  for (const f of failures) {
    const why = f.code ? `${f.http_status ?? ''} ${f.code}`.trim() : 'error';
    lines.push(
      `  ${f.workflow_id}`,
      `    ${why}${f.request_id ? `, request_id ${f.request_id}` : ''}; ${f.attempts} attempt${f.attempts === 1 ? '' : 's'}, last failed ${f.failed_at ?? '?'}`,
      `    error:  ${f.error}`,
      f.stream !== null && isReadByTheRun(f.stream)
        ? `    UI:     ${f.ui_url}  (the run that read it)`
        : `    UI:     ${f.ui_url}  (Reset to the first workflow task, or "Start workflow like this one")`,
      ...(f.replay ? [`    replay: ${f.replay}`] : ['    re-run: the next run of its stream reads it again']),
    );
  }
  return lines;
}
