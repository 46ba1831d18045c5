import type { RateClassStats } from '../../connectors/support-api/index.js';
import type { RunProgress } from '../../schemas/run-summary.js';
import type { RunSummary } from '../../worker/run-sync.js';
import { auditSummaryLine } from './audit.js';

const pad = (s: string | number, n: number) => String(s).padEnd(n);
const padStart = (s: string | number, n: number) => String(s).padStart(n);

/** Lines of the live display: one per stream, then requests per route class and rate-limit waits. */
export function progressLines(progress: RunProgress, rates: readonly RateClassStats[]): string[] {
  const lines = [`run ${progress.runId} (${progress.mode}) — ${progress.status}`];
  lines.push(
    `  ${pad('stream', 24)}${pad('status', 11)}${padStart('windows', 9)}${padStart('pages', 8)}${padStart('rows', 9)}  current`,
  );
  for (const [name, s] of Object.entries(progress.streams)) {
    lines.push(
      `  ${pad(name, 24)}${pad(s.status, 11)}${padStart(`${s.windowsDone}/${s.windowsTotal}`, 9)}${padStart(s.pages, 8)}${padStart(s.rows, 9)}  ${s.error ?? s.current ?? ''}`,
    );
  }
  if (progress.missing?.summary) lines.push(`  INCOMPLETE: ${progress.missing.summary}`);
  const used = rates.filter((r) => r.requests > 0);
  if (used.length) {
    lines.push(
      `  requests: ${used
        .map(
          (r) =>
            `${r.routeClass} ${r.requests}${r.limit ? ` (limit ${r.limit}/${Math.round(r.windowMs / 1000)}s)` : ''}${r.rateLimited ? ` ${r.rateLimited}×429` : ''}`,
        )
        .join(' · ')}`,
    );
    const waits = used.filter((r) => r.waits > 0);
    if (waits.length) {
      lines.push(
        `  rate-limit waits: ${waits.map((r) => `${r.routeClass} ${r.waits}× ${(r.totalWaitMs / 1000).toFixed(1)}s`).join(' · ')}`,
      );
    }
  }
  return lines;
}

/** One plain line for logs: the run's state in a sentence, e.g. "[40 s] running: tickets 3 pages …". */
export function progressLine(
  progress: RunProgress,
  rates: readonly RateClassStats[],
  elapsedMs: number,
): string {
  const streams = Object.entries(progress.streams);
  const done = streams.filter(([, s]) => s.status === 'succeeded' || s.status === 'failed').length;
  const running = streams
    .filter(([, s]) => s.status === 'running')
    .map(
      ([name, s]) => `${name} ${s.windowsDone}/${s.windowsTotal} windows, ${s.pages} pages, ${s.rows} rows`,
    );
  const requests = rates
    .filter((r) => r.requests > 0)
    .map((r) => `${r.routeClass} ${r.requests}${r.rateLimited ? ` (${r.rateLimited}×429)` : ''}`)
    .join(', ');
  const waited = rates.reduce((a, r) => a + r.totalWaitMs, 0);
  return (
    `[${Math.round(elapsedMs / 1000)} s] ${done}/${streams.length} streams done` +
    (running.length ? `; running: ${running.join('; ')}` : '') +
    (requests ? `; requests: ${requests}` : '') +
    (waited > 0 ? `; rate-limit waits ${(waited / 1000).toFixed(1)} s` : '')
  );
}

/**
 * The live display. On a terminal it redraws the table in place; elsewhere (piped, CI logs) it never
 * redraws: a line when a stream ends, and a one-line state at least every `everyMs` — a bounded number of
 * plain lines that reads well in a log. Writes to stderr.
 */
export function createProgressRenderer(
  stream: Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean } = process.stderr,
  everyMs = 10_000,
  now: () => number = Date.now,
) {
  let drawn = 0;
  const started = now();
  let lastPrint = started;
  const ended = new Set<string>();
  return (progress: RunProgress, rates: readonly RateClassStats[]) => {
    if (stream.isTTY) {
      const lines = progressLines(progress, rates);
      if (drawn) stream.write(`\x1b[${drawn}A\x1b[J`);
      stream.write(`${lines.join('\n')}\n`);
      drawn = lines.length;
      return;
    }
    for (const [name, s] of Object.entries(progress.streams)) {
      if ((s.status !== 'succeeded' && s.status !== 'failed') || ended.has(name)) continue;
      ended.add(name);
      stream.write(
        `[${Math.round((now() - started) / 1000)} s] ${name} ${s.status}: ${s.windowsDone} windows, ${s.pages} pages, ${s.rows} rows${s.error ? ` — ${s.error}` : ''}\n`,
      );
    }
    if (progress.status === 'running' && now() - lastPrint >= everyMs) {
      stream.write(`${progressLine(progress, rates, now() - started)}\n`);
      lastPrint = now();
    }
  };
}

/** The end-of-run table. */
export function summaryTable(summary: RunSummary): string {
  const rows = [
    `${pad('stream', 24)}${pad('status', 11)}${padStart('windows', 8)}${padStart('pages', 8)}${padStart('rows', 9)}`,
    ...Object.entries(summary.streams).map(
      ([name, s]) =>
        `${pad(name, 24)}${pad(s.status, 11)}${padStart(s.windows, 8)}${padStart(s.pages, 8)}${padStart(s.rows, 9)}`,
    ),
    `${pad('total', 35)}${padStart('', 8)}${padStart(summary.totals.pages, 8)}${padStart(summary.totals.rows, 9)}`,
  ];
  const head = `sync ${summary.status} in ${(summary.duration_ms / 1000).toFixed(1)}s (run ${summary.run_id})${summary.missing?.summary ? ` — missing: ${summary.missing.summary}` : ''}`;
  return [
    head,
    ...rows.map((r) => `  ${r}`),
    ...(summary.audit ? [`  ${auditSummaryLine(summary.audit)}`] : []),
    ...(summary.error ? [`  error: ${summary.error}`] : []),
  ].join('\n');
}
