import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { WorkflowClient } from '@temporalio/client';
import type { Config } from '../../schemas/config.js';
import type { SyncSettings } from '../../schemas/run-input.js';
import { ALL_STREAMS } from '../../schemas/streams.js';
import { settingsFromConfig } from '../../worker/config.js';
import { newRunId, runWorkflowId } from '../../worker/run-sync.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A worker process (`support-sync worker`), killed with SIGKILL. `node --import tsx` so the pid is the worker's. */
export function spawnWorker(env: Record<string, string>): {
  child: ChildProcess;
  ready: Promise<void>;
  stderr: string[];
} {
  const stderr: string[] = [];
  const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'worker'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr.push(chunk);
      if (chunk.includes('worker running')) resolve();
    });
    child.once('exit', (code, signal) => reject(new Error(`worker exited early (${code ?? signal})`)));
  });
  ready.catch(() => undefined);
  return { child, ready, stderr };
}

export function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** The input of an incremental run of every stream, as the configuration sets it (settings overridable). */
export function incrementalRunInput(config: Config, settings: Partial<SyncSettings> = {}) {
  const now = new Date();
  return {
    runId: newRunId(now),
    mode: 'incremental' as const,
    streams: [...ALL_STREAMS],
    settings: { ...settingsFromConfig(config, now), ...settings },
  };
}

/**
 * Starts a sync run workflow on `taskQueue`; `result` is its outcome, 'succeeded' or 'failed: <message>'
 * (wrapped: an async function returning the promise itself would wait for the run).
 */
export async function startRun(
  client: WorkflowClient,
  taskQueue: string,
  input: { runId: string },
): Promise<{ result: Promise<string> }> {
  const handle = await client.start('syncRunWorkflow', {
    taskQueue,
    workflowId: runWorkflowId(input.runId),
    args: [input],
  });
  const result = handle.result().then(
    () => 'succeeded',
    (err: unknown) => `failed: ${(err as Error).message}`,
  );
  return { result };
}
