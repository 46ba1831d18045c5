import type { Client } from '@temporalio/client';
import type { WorkspacesHandle } from '../../companion/index.js';
import { SupportApiClient } from '../../connectors/support-api/index.js';
import type { Config } from '../../schemas/config.js';
import { Secret } from '../../schemas/secret.js';
import { settingsFromConfig, workspaceConfigLoader } from '../../worker/config.js';
import { newRunId, runSync } from '../../worker/run-sync.js';
import { silentLogger } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';

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
