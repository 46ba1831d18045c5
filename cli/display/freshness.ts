import type { StreamFreshness } from '../../worker/freshness.js';

const pad = (s: unknown, n: number) => String(s ?? '').padEnd(n);

/** A duration for people: `45 s`, `12 min`, `5 h`, `3 d`. */
export function durationText(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  const minutes = Math.round(s / 60);
  if (minutes < 120) return `${minutes} min`;
  const hours = Math.round(minutes / 60);
  return hours < 72 ? `${hours} h` : `${Math.round(hours / 24)} d`;
}

/**
 * `status`'s freshness section: per stream with a stamp, the newest stamp the source served and the
 * warehouse's, the lag between them, the last complete read, and whether it is over the target.
 */
export function freshnessLines(streams: readonly StreamFreshness[], sloMs: number): string[] {
  const over = streams.filter((s) => s.over_slo);
  const lines = [
    `Freshness against the target of ${durationText(sloMs)} (SYNC_FRESHNESS_SLO): ${over.length === 0 ? 'every stream within it' : `${over.length} over it (${over.map((s) => s.stream).join(', ')})`}`,
    `  ${pad('stream', 17)}${pad('stamp', 15)}${pad('newest at the source', 30)}${pad('newest in the warehouse', 30)}${pad('lag', 10)}last complete read`,
  ];
  for (const s of streams) {
    const lag = s.lag_seconds === null ? '—' : durationText(s.lag_seconds * 1000);
    const read = s.read_age_seconds === null ? 'never' : `${durationText(s.read_age_seconds * 1000)} ago`;
    lines.push(
      `  ${pad(s.stream, 17)}${pad(s.stamp, 15)}${pad(s.source_newest ?? '—', 30)}${pad(s.warehouse_newest ?? '—', 30)}${pad(lag, 10)}${pad(read, 12)}${s.over_slo ? `OVER (${s.reasons.join(', ')})` : ''}`.trimEnd(),
    );
  }
  return lines;
}
