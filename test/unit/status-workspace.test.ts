import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workspaceLines } from '../../cli/commands/status.js';
import { uncoveredFailures } from '../../cli/display/failed-windows.js';
import type { SyncRunRecord } from '../../schemas/warehouse.js';
import { loadConfig } from '../../worker/config.js';

const ENV = {
  SUPPORT_API_URL: 'http://127.0.0.1:1',
  SUPPORT_API_KEY: 'k',
  DESTINATION_URL: 'postgres://u@127.0.0.1:1/db',
};

/** A deployment with a workspaces file of one workspace, acme. */
function deployment() {
  const dir = mkdtempSync(join(tmpdir(), 'status-ws-'));
  const file = join(dir, 'workspaces.yaml');
  writeFileSync(file, 'workspaces:\n  - id: acme\n    url: http://127.0.0.1:2\n    key: { env: ACME_KEY }\n');
  return { ...ENV, SYNC_WORKSPACES_FILE: file, ACME_KEY: 'acme-key' };
}

const window = (over: Partial<SyncRunRecord>): SyncRunRecord => ({
  run_id: 'r1:w',
  parent_run_id: 'r1',
  workflow_id: 'acme/agent_sessions/2026-01-01T00:00:00.000Z/2026-04-01T00:00:00.000Z',
  stream: 'agent_sessions',
  window_start: '2026-01-01T00:00:00.000Z',
  window_end: '2026-04-01T00:00:00.000Z',
  mode: 'incremental',
  status: 'failed',
  started_at: '2026-04-02T00:00:00.000Z',
  finished_at: '2026-04-02T00:01:00.000Z',
  pages: 0,
  rows_written: 0,
  requests: 0,
  error: 'HTTP 400 VALIDATION_ERROR',
  ...over,
});

describe('status --workspace names the workspace and reads its windows as its own (cli/commands/status.ts)', () => {
  it('the first line names the workspace and its schema in a deployment of several; none in one of one', () => {
    const env = deployment();
    expect(workspaceLines(loadConfig(env, undefined, { SYNC_WORKSPACE: 'acme' }))).toEqual([
      'Workspace: acme (schema support_acme)',
      '',
    ]);
    expect(workspaceLines(loadConfig(env))[0]).toBe(
      "Workspace: default (schema support; the deployment's own settings)",
    );
    expect(workspaceLines(loadConfig(ENV))).toEqual([]);
    const bigquery = loadConfig({ ...env, DESTINATION_URL: 'bigquery://proj/support' }, undefined, {
      SYNC_WORKSPACE: 'acme',
    });
    expect(workspaceLines(bigquery)[0]).toBe('Workspace: acme (dataset support_acme)');
    // Shared tables: every workspace reads its rows of the deployment's schema.
    const shared = loadConfig({ ...env, SYNC_WAREHOUSE_LAYOUT: 'shared-tables' }, undefined, {
      SYNC_WORKSPACE: 'acme',
    });
    expect(workspaceLines(shared)[0]).toBe('Workspace: acme (schema support, shared tables)');
  });

  it('loads a workspace whose key this machine lacks only for a command that never calls the API', () => {
    const { ACME_KEY: _, ...withoutKey } = deployment();
    expect(() => loadConfig(withoutKey, undefined, { SYNC_WORKSPACE: 'acme' })).toThrow(
      /ACME_KEY is not set/,
    );
    const acme = loadConfig(withoutKey, undefined, { SYNC_WORKSPACE: 'acme' }, { sourceKeyNeeded: false });
    expect(workspaceLines(acme)[0]).toBe('Workspace: acme (schema support_acme)');
    expect(acme.SUPPORT_API_KEY.reveal()).toBe('not-needed');
  });

  it("--failed: a workspace's failed export window has its pass, its replay command, and is covered only by its pass", () => {
    const acme = loadConfig(deployment(), undefined, { SYNC_WORKSPACE: 'acme' });
    const failed = window({});
    const [failure] = uncoveredFailures([failed], acme);
    expect(failure).toMatchObject({
      pass: 'agent_sessions',
      replay: `npm run cli -- replay '${failed.workflow_id}' --wait`,
    });
    // A later succeeded window of another pass over the same range covers nothing.
    const other = window({
      run_id: 'r2:w',
      workflow_id: 'acme/tickets/2025-12-01T00:00:00.000Z/2026-05-01T00:00:00.000Z',
      stream: 'tickets',
      status: 'succeeded',
      window_start: '2025-12-01T00:00:00.000Z',
      window_end: '2026-05-01T00:00:00.000Z',
      started_at: '2026-04-03T00:00:00.000Z',
      error: null,
    });
    expect(uncoveredFailures([failed, other], acme)).toHaveLength(1);
    // One of its own pass does.
    const same = { ...other, workflow_id: failed.workflow_id.replace('2026-01-01', '2025-12-01') };
    expect(uncoveredFailures([failed, { ...same, stream: 'agent_sessions' }], acme)).toHaveLength(0);
  });

  it('--failed: a reference window, read by its run itself, links to the run and has no replay', () => {
    const acme = loadConfig(deployment(), undefined, { SYNC_WORKSPACE: 'acme' });
    const failed = window({
      workflow_id: 'acme/tags/2026-04-02T00:00:00.000Z/2026-04-02T00:00:00.000Z',
      stream: 'tags',
      window_start: null,
      window_end: null,
    });
    const run = window({
      run_id: 'r1',
      parent_run_id: null,
      workflow_id: 'sync-run/acme/r1',
      stream: null,
    });
    const [failure] = uncoveredFailures([run, failed], acme);
    expect(failure).toMatchObject({ pass: 'tags', replay: null });
    expect(failure?.ui_url).toMatch(/\/workflows\/sync-run%2Facme%2Fr1$/);
  });
});
