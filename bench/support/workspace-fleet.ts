/**
 * The fleet of one scale of bench:workspaces: a companion serving every workspace on one port, the
 * workspaces file that names them (a key file each, beside it), and the two worker processes that serve
 * them all — the real worker (`cli/main.ts worker`) with SYNC_WORKSPACES_FILE, as a deployment runs it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWorkspaces, type WorkspacesHandle } from '../../companion/index.js';
import { defaultWorkspaceSchema } from '../../schemas/workspaces.js';
import { startWorkerProcess, type WorkerProcess } from './worker-process.js';
import type { WorkspaceSpec } from './workspace-world.js';

/** The deployment's own schema; each workspace's is `support_<id>` (schemas/workspaces.ts). */
const DEPLOYMENT_SCHEMA = 'support';

/** The PostgreSQL schema a workspace of the file syncs into. */
export const schemaOf = (id: string) => defaultWorkspaceSchema(DEPLOYMENT_SCHEMA, id);

/**
 * A companion of `workspaces`, rate limits off in every workspace and at the front door: the bench measures
 * what the pipeline costs per workspace, not how it waits for an API's limits.
 */
export function startCompanionOf(workspaces: WorkspaceSpec[]): Promise<WorkspacesHandle> {
  return startWorkspaces({
    workspaces: workspaces.map((w) => ({ id: w.id, seed: w.seed, tickets: w.tickets, rateLimits: false })),
    rateLimits: false,
  });
}

/** Writes the workspaces file of `ids` (each key in its own file beside it); `remove` deletes the folder. */
export function writeWorkspacesFile(
  companion: WorkspacesHandle,
  ids: string[],
): { path: string; remove(): void } {
  const folder = mkdtempSync(join(tmpdir(), 'bench-workspaces-'));
  const lines = ['workspaces:'];
  for (const id of ids) {
    writeFileSync(join(folder, `${id}.key`), `${companion.workspace(id).keys.admin}\n`, { mode: 0o600 });
    lines.push(`  - id: ${id}`, `    url: ${companion.baseUrl}`, `    key: { file: ${id}.key }`);
  }
  const path = join(folder, 'workspaces.yaml');
  writeFileSync(path, `${lines.join('\n')}\n`);
  return { path, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

/** `count` worker processes on the same environment (one task queue, one workspaces file). */
export async function startWorkerFleet(
  count: number,
  env: Record<string, string>,
  log: (line: string) => void,
): Promise<WorkerProcess[]> {
  const workers: WorkerProcess[] = [];
  try {
    // One after the other: each bundles the workflows at start, which is CPU the other would slow.
    for (let i = 0; i < count; i++) workers.push(await startWorkerProcess(env, log));
  } catch (err) {
    await Promise.all(workers.map((w) => w.stop()));
    throw err;
  }
  return workers;
}

/**
 * Rejects when a worker process exits while the bench still needs it (a crash: the runs it held would
 * wait for ever), naming it and its exit; `stop()` of every worker first makes it harmless.
 */
export function workerExit(workers: WorkerProcess[]): { exited: Promise<never>; disarm(): void } {
  let armed = true;
  const exited = new Promise<never>((_, reject) => {
    for (const [i, w] of workers.entries())
      w.child.once('exit', (code, signal) => {
        if (armed)
          reject(new Error(`worker process ${i + 1} (pid ${w.child.pid}) exited: ${signal ?? code}`));
      });
  });
  exited.catch(() => undefined);
  return { exited, disarm: () => (armed = false) };
}
