import { createWriteStream, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { spawnCli } from '../support/cli.js';

/**
 * What a stream of output held, counted as it passed (never kept whole: a runaway log is gigabytes): its
 * bytes and lines, ESC and BEL bytes, and occurrences of each needle (across chunk boundaries).
 */
export class OutputScan<N extends string> {
  bytes = 0;
  lines = 0;
  escapes = 0;
  bells = 0;
  readonly found: Record<N, number>;
  readonly #needles: [N, string][];
  readonly #overlap: number;
  #carry = '';

  constructor(needles: Record<N, string>) {
    this.#needles = Object.entries(needles) as [N, string][];
    this.found = Object.fromEntries(this.#needles.map(([name]) => [name, 0])) as Record<N, number>;
    this.#overlap = Math.max(0, ...this.#needles.map(([, n]) => n.length - 1));
  }

  feed(chunk: Buffer): void {
    this.bytes += chunk.length;
    for (const byte of chunk) {
      if (byte === 0x0a) this.lines += 1;
      else if (byte === 0x1b) this.escapes += 1;
      else if (byte === 0x07) this.bells += 1;
    }
    // Latin-1: one character per byte, whatever the chunk boundary cuts (the needles are ASCII).
    const text = this.#carry + chunk.toString('latin1');
    for (const [name, needle] of this.#needles)
      for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1))
        // Only matches ending in the new chunk: one wholly in the carry was counted with the last chunk.
        if (at + needle.length > this.#carry.length) this.found[name] += 1;
    this.#carry = this.#overlap ? text.slice(-this.#overlap) : '';
  }
}

/** One CLI run whose output went to files: how it ended, and what its output held. */
export interface CliRun<N extends string> {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** False: still running at the deadline, and killed. */
  endedByItself: boolean;
  ms: number;
  /** The last stdout line parsed (the sync's JSON summary), or null. */
  summary: Record<string, unknown> | null;
  stdout: OutputScan<N>;
  stderr: OutputScan<N>;
  /** The child's largest resident set seen (sampled twice a second), in bytes. */
  peakRssBytes: number;
  /** `--metrics-port 0`: whether a malformed request line was sent to the endpoint it printed. */
  metricsPeerSent: boolean;
}

const STDOUT_TAIL = 256 * 1024;

function residentBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** A request line whose URL `new URL` refuses: a server that parses it outside a try dies of it. */
function sendMalformedRequest(url: URL): void {
  const socket = connect(Number(url.port), url.hostname, () =>
    socket.end('GET http://a:b:c/ HTTP/1.1\r\nHost: metrics\r\n\r\n'),
  );
  socket.on('error', () => {});
  socket.on('data', () => {});
}

/**
 * `support-sync <args>` in a child process (the real CLI) with stdout and stderr (the log) written to
 * files and scanned as they pass (`needles`); killed (SIGTERM, then SIGKILL) if it has not ended after `deadlineMs`.
 * `metricsPeer`: once the CLI prints its metrics endpoint, a peer sends it a malformed request line.
 */
export function cliToFiles<N extends string>(
  args: string[],
  env: Record<string, string>,
  options: {
    stdoutPath: string;
    logPath: string;
    deadlineMs: number;
    /** What to count in the output (a secret, the escape sequences a source sent …). */
    needles: Record<N, string>;
    metricsPeer?: boolean;
  },
): Promise<CliRun<N>> {
  const started = Date.now();
  const child = spawnCli(args, env);
  const stdout = new OutputScan(options.needles);
  const stderr = new OutputScan(options.needles);
  const stdoutFile = createWriteStream(options.stdoutPath);
  const logFile = createWriteStream(options.logPath);
  let tail = '';
  let peakRssBytes = 0;
  let metricsPeerSent = false;
  let stderrHead = '';
  child.stdout.on('data', (c: Buffer) => {
    stdout.feed(c);
    stdoutFile.write(c);
    tail = (tail + c.toString('utf8')).slice(-STDOUT_TAIL);
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr.feed(c);
    logFile.write(c);
    if (options.metricsPeer && !metricsPeerSent && stderrHead.length < 1 << 20) {
      stderrHead += c.toString('utf8');
      const m = /metrics:\s+(http:\/\/\S+)/.exec(stderrHead);
      if (m) {
        metricsPeerSent = true;
        sendMalformedRequest(new URL(m[1]!));
      }
    }
  });
  const sampler = setInterval(() => {
    if (child.pid) peakRssBytes = Math.max(peakRssBytes, residentBytes(child.pid));
  }, 500);
  let endedByItself = true;
  const killer = setTimeout(() => {
    endedByItself = false;
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
  }, options.deadlineMs);
  const closed = (s: NodeJS.WritableStream) => new Promise<void>((resolve) => s.end(resolve));
  return new Promise((resolve) =>
    child.once('close', async (code, signal) => {
      clearInterval(sampler);
      clearTimeout(killer);
      await Promise.all([closed(stdoutFile), closed(logFile)]);
      let summary: Record<string, unknown> | null = null;
      try {
        const parsed: unknown = JSON.parse(tail.trim().split('\n').at(-1) ?? '');
        if (parsed && typeof parsed === 'object') summary = parsed as Record<string, unknown>;
      } catch {
        summary = null;
      }
      resolve({
        code,
        signal,
        endedByItself,
        ms: Date.now() - started,
        summary,
        stdout,
        stderr,
        peakRssBytes,
        metricsPeerSent,
      });
    }),
  );
}
