import { Duration } from 'luxon';
import { QUEUED_ROUTE_CLASSES } from '../../schemas/config.js';
import type { Forecast } from '../../schemas/forecast.js';

const pad = (s: unknown, n: number) => String(s).padEnd(n);
const padStart = (s: unknown, n: number) => String(s).padStart(n);
const count = (n: number) => n.toLocaleString('en-US');

/** A duration as people read it: seconds, minutes or hours. */
export function duration(ms: number): string {
  if (ms < 120_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 120 * 60_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

const isoDuration = (ms: number) =>
  Duration.fromMillis(ms).shiftTo('days', 'hours', 'minutes', 'seconds').toISO();

/** What `plan` prints: the windows, requests per class and what makes them, the binding class, the wall time. */
export function forecastLines(f: Forecast): string[] {
  const lines = [
    `Forecast: ${f.kind}${f.range ? ` of [${f.range.from}, ${f.range.before})` : ''}, ${f.streams.length} stream(s) — made ${f.made_at}`,
    `Settings: page size ${f.settings.page_size}, export windows ${isoDuration(f.settings.window_ms)}, look-back ${isoDuration(f.settings.lookback_ms)}, thread look-back ${isoDuration(f.settings.thread_lookback_ms)}, rolling re-read ${f.settings.thread_reverify_per_run} a run; limits ${f.settings.limits_from === 'spec' ? "the spec's (SUPPORT_API_RATE_LIMITS is off)" : 'as configured'}`,
    `Tickets: ${count(f.tickets.listed)} listed in ${count(f.tickets.list_pages)} page(s)${f.tickets.oldest_created_at ? `, oldest created ${f.tickets.oldest_created_at}` : ''}; exports ${f.range ? 'over the range' : f.history_start ? `from ${f.history_start}` : 'not planned'}`,
    '',
    'Export windows:',
  ];
  if (f.passes.length === 0) lines.push('  (none)');
  for (const p of f.passes) {
    const first = p.windows[0];
    const last = p.windows.at(-1);
    const pages = p.windows.reduce((n, w) => n + w.pages, 0);
    lines.push(
      `  ${pad(p.pass, 24)}${padStart(p.windows.length, 4)} window(s)  ${first ? `${first.window_start} → ${last!.window_end}` : '—'}  ${padStart(count(pages), 6)} page(s)${p.skipped ? `, ${p.skipped} skipped (done before)` : ''}${p.covered_by ? ` (its first read: ${p.covered_by} covers it)` : ''}`,
    );
  }
  lines.push(
    '',
    `Requests per route class (${f.settings.limits_from === 'spec' ? "the spec's limits" : "the key's limits"}):`,
    `  ${pad('class', 11)}${padStart('requests', 9)}${padStart('at least', 10)}${padStart('limit', 14)}${padStart('lower bound', 13)}${padStart('expected', 11)}${padStart('left to others', 16)}`,
  );
  for (const c of QUEUED_ROUTE_CLASSES) {
    const k = f.classes[c];
    lines.push(
      `  ${pad(c, 11)}${padStart(count(k.requests), 9)}${padStart(count(k.at_least), 10)}${padStart(`${k.limit}/${duration(k.window_ms)}`, 14)}${padStart(duration(k.lower_bound_ms), 13)}${padStart(duration(k.expected_ms), 11)}${padStart(`${Math.round(k.share_left * 100)} %`, 16)}`,
    );
  }
  lines.push('', 'What makes them:');
  for (const item of f.items) {
    lines.push(
      `  ${pad(item.route_class, 10)}${padStart(count(item.requests), 7)}  ${item.what} — ${item.basis}`,
    );
  }
  lines.push(
    '',
    `Binding class: ${f.binding}. Wall time at these limits: at least ${duration(f.wall.lower_bound_ms)} (lower bound); expected ${duration(f.wall.expected_ms)} (× ${f.wall.ratio.toFixed(3)}: ${f.wall.ratio_source}).`,
    `This forecast cost ${
      QUEUED_ROUTE_CLASSES.filter((c) => f.cost[c] > 0)
        .map((c) => `${f.cost[c]} ${c} request(s)`)
        .join(' and ') || 'no request'
    } (the sweep of the ticket list; one probe page per export pass the warehouse does not hold).`,
  );
  return lines;
}
