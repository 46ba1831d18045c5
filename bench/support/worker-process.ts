import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** A worker process (`node --import tsx cli/main.ts worker`, what `npm run worker` starts), with its memory. */
export interface WorkerProcess {
  child: ChildProcess;
  /** Highest RSS sampled since the last reset (bytes). */
  sampledPeak(): number;
  resetSample(): void;
  /** The kernel's peak RSS of the process (VmHWM, bytes). */
  hwm(): number;
  /** Its RSS now (VmRSS, bytes). */
  rss(): number;
  /** Its `/metrics` URL, when started with `--metrics-port` (the URL it logs when listening). */
  metricsUrl: string | null;
  stop(): Promise<void>;
}

function statusField(pid: number, field: string): number {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return m ? Number(m[1]) * 1024 : 0;
}

/**
 * Starts a worker process with `env` and resolves once it polls; its errors go to `log`.
 * `BENCH_WORKER_NODE_OPTIONS` in the bench's environment becomes the worker's (only) NODE_OPTIONS, e.g.
 * `--max-old-space-size=384` to tell memory the worker holds from garbage V8 has not collected yet.
 */
export async function startWorkerProcess(
  env: Record<string, string>,
  log: (line: string) => void,
  args: string[] = [],
): Promise<WorkerProcess> {
  const nodeOptions = process.env['BENCH_WORKER_NODE_OPTIONS'];
  const child = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'worker', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const pid = child.pid!;
  let tail = '';
  let metricsUrl: string | null = null;
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d: Buffer) => {
      tail = (tail + d.toString()).slice(-20_000);
      metricsUrl ??= /"url":"([^"]+)"[^\n]*"metrics endpoint listening"/.exec(tail)?.[1] ?? null;
      if (tail.includes('"worker running"')) resolve();
      for (const line of d.toString().split('\n')) if (/"level":(50|60)/.test(line)) log(`worker: ${line}`);
    });
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}:\n${tail}`)));
  });
  let peak = 0;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, statusField(pid, 'VmRSS'));
    } catch {
      // exited
    }
  }, 250);
  return {
    child,
    sampledPeak: () => peak,
    resetSample: () => {
      peak = 0;
    },
    hwm: () => statusField(pid, 'VmHWM'),
    rss: () => statusField(pid, 'VmRSS'),
    metricsUrl,
    async stop() {
      clearInterval(timer);
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
