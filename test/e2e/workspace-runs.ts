import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { WorkspacesHandle } from '../../companion/index.js';
import { SupportApiClient } from '../../connectors/support-api/index.js';
import type { Config } from '../../schemas/config.js';
import { Secret } from '../../schemas/secret.js';
import { settingsFromConfig, workspaceConfigLoader } from '../../worker/config.js';
import { newRunId, runSync } from '../../worker/run-sync.js';
import { silentLogger } from './harness.js';
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
