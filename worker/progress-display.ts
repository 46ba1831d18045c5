import type { RateClassStats } from '../connectors/support-api/index.js';
import type { RunProgress } from '../schemas/sync.js';
import type { RunSummary } from './run-sync.js';

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

/** Redraws in place on a terminal; elsewhere prints a snapshot every `everyMs`. Writes to stderr. */
export function createProgressRenderer(stream: NodeJS.WriteStream = process.stderr, everyMs = 5000) {
  let drawn = 0;
  let lastPrint = 0;
  return (lines: string[], force = false) => {
    if (stream.isTTY) {
      if (drawn) stream.write(`\x1b[${drawn}A\x1b[J`);
      stream.write(`${lines.join('\n')}\n`);
      drawn = lines.length;
    } else if (force || Date.now() - lastPrint >= everyMs) {
      stream.write(`${lines.join('\n')}\n`);
      lastPrint = Date.now();
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
  const head = `sync ${summary.status} in ${(summary.duration_ms / 1000).toFixed(1)}s (run ${summary.run_id})`;
  return [head, ...rows.map((r) => `  ${r}`), ...(summary.error ? [`  error: ${summary.error}`] : [])].join(
    '\n',
  );
}
