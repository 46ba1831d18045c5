import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What a CLI run printed, and how it ended. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * The CLI's child process, its stdout and stderr piped, with exactly `env` as its configuration (the
 * caller's own SUPPORT_*, DESTINATION_*, TEMPORAL_*, SYNC_* … settings are left out).
 */
export function spawnCli(
  args: string[],
  env: Record<string, string>,
  options: { readonly cwd?: string } = {},
): ChildProcessByStdio<null, Readable, Readable> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(SUPPORT_|DESTINATION_|TEMPORAL_|SYNC_|POSTGRES_|BIGQUERY_|ANALYTICS_|REPORT_)/.test(k),
    ),
  );
  return spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * `support-sync <args>` as a user runs it, in a child process, with exactly `env` as its configuration (the
 * test process's own SUPPORT_*, DESTINATION_*, TEMPORAL_*, SYNC_* … settings are left out); `cwd`: another
 * checkout of the project (default: this one).
 */
export function cli(
  args: string[],
  env: Record<string, string>,
  options: { readonly cwd?: string } = {},
): Promise<CliResult> {
  const started = Date.now();
  const child = spawnCli(args, env, options);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return new Promise((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr, ms: Date.now() - started })),
  );
}
