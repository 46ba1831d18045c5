import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

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
