import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkspacesHandle } from '../../companion/index.js';
import { SupportApiClient } from '../../connectors/support-api/index.js';
import type { Config } from '../../schemas/config.js';
import { Secret } from '../../schemas/secret.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig, settingsFromConfig, workspaceConfigLoader } from '../../worker/config.js';
import { newRunId, runSync } from '../../worker/run-sync.js';
import { pacingOf, routeWorkspaces, startWorkers } from '../../worker/workers.js';
import { silentLogger, type workflowBundle } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';

/**
 * The workspaces file of the two-workspace e2e tests: `north` with its key from NORTH_API_KEY, `south` with
 * its key in a file beside it and `southLines` (its schema, settings) after. Returns the file's path.
 */
export function writeNorthSouthFile(fleet: WorkspacesHandle, southLines: string[] = []): string {
  const folder = mkdtempSync(join(tmpdir(), 'workspaces-'));
  const file = join(folder, 'workspaces.yaml');
  writeFileSync(join(folder, 'south.key'), `${fleet.workspace('south').keys.admin}\n`);
  writeFileSync(
    file,
    [
      'workspaces:',
      '  - id: north',
      `    url: ${fleet.baseUrl}`,
      '    key: { env: NORTH_API_KEY }',
      '  - id: south',
      `    url: ${fleet.baseUrl}`,
      '    key: { file: south.key }',
      ...southLines,
      '',
    ].join('\n'),
  );
  return file;
}

/**
 * The deployment of the two-workspace e2e tests: its own workspace `home`, and `north` and `south` from
 * `file`, with the API's limits, the audit and the thread look-back off; `env` adds the warehouse's settings.
 */
export function northSouthConfig(
  fleet: WorkspacesHandle,
  file: string,
  taskQueue: string,
  env: Record<string, string>,
): Config {
  return loadConfig({ NORTH_API_KEY: fleet.workspace('north').keys.admin }, undefined, {
    SUPPORT_API_URL: fleet.baseUrl,
    SUPPORT_API_KEY: fleet.workspace('home').keys.admin,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SYNC_WORKSPACES_FILE: file,
    SYNC_THREAD_LOOKBACK: 'PT0S',
    SUPPORT_API_RATE_LIMITS: 'off',
    SYNC_AUDIT_SHARE: '0',
    LOG_LEVEL: 'silent',
    ...env,
  });
}

/**
 * In-process workers serving every workspace of `base`'s file, as `npm run worker` does: the deployment's
 * dependencies, a router to each workspace's, the workers on `base`'s task queue. `close` stops them all.
 */
export async function startWorkspaceWorkers(
  env: TestWorkflowEnvironment,
  base: Config,
  bundle: Awaited<ReturnType<typeof workflowBundle>>,
  options: { metrics?: boolean } = {},
): Promise<{ deps: Dependencies; close(): Promise<void> }> {
  const deps = await buildDependencies(base, silentLogger, options.metrics ? { metrics: true } : {});
  const router = routeWorkspaces({
    connection: env.nativeConnection,
    namespace: 'default',
    config: base,
    deps,
    // As startLocalWorkers does: the process's metrics watch every workspace's activities.
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    logger: silentLogger,
  });
  const workers = await startWorkers({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue: base.TEMPORAL_TASK_QUEUE,
    activities: router.activities(),
    ...pacingOf(base),
    workflowBundle: bundle,
    shutdownGraceTime: '5 seconds',
  });
  return {
    deps,
    async close() {
      await workers.shutdown();
      await router.close();
      await deps.close();
    },
  };
}

/** One incremental run of `workspace` with its own settings (the workspaces file's, over `base`), to its end. */
export function runWorkspace(client: Client, taskQueue: string, base: Config, workspace: string) {
  const config = workspaceConfigLoader(base)(workspace);
  const now = new Date();
  return runSync(
    client,
    taskQueue,
    {
      runId: newRunId(now),
      mode: 'incremental',
      streams: config.SYNC_STREAMS,
      settings: settingsFromConfig(config, now),
    },
    undefined,
    undefined,
    workspace,
  );
}

/** What one workspace of the companion serves since `since` (ISO), read with its own key. */
export async function workspaceSnapshot(fleet: WorkspacesHandle, workspace: string, since: string) {
  const client = new SupportApiClient({
    baseUrl: fleet.baseUrl,
    apiKey: new Secret(fleet.workspace(workspace).keys.admin),
    logger: silentLogger,
  });
  try {
    return await sourceSnapshot(client, since);
  } finally {
    await client.close();
  }
}
