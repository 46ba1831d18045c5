import type { RequestLogEntry, RouteClass } from '../../companion/index.js';

/**
 * Requests that reached the companion's rate limiter (injected faults are answered before it and carry no
 * class), counted per route class in the companion's fixed windows (aligned to multiples of `windowMs`);
 * 429s count too. Returns the windows over a class's limit and a summary per class.
 */
export function requestsPerWindow(
  log: readonly RequestLogEntry[],
  windowMs: number,
  limitOf: (c: RouteClass) => number,
) {
  const buckets = new Map<string, number>();
  for (const r of log) {
    if (r.routeClass === null) continue;
    const key = `${r.routeClass}@${Math.floor(Date.parse(r.at) / windowMs)}`;
    buckets.set(key, (buckets.get(key) ?? 0) + 1);
  }
  const over = [...buckets].filter(([key, n]) => n > limitOf(key.split('@')[0] as RouteClass));
  const perClass: Record<string, { requests: number; max_per_window: number; limit: number }> = {};
  for (const [key, n] of buckets) {
    const c = key.split('@')[0] as RouteClass;
    const entry = perClass[c] ?? { requests: 0, max_per_window: 0, limit: limitOf(c) };
    perClass[c] = entry;
    entry.requests += n;
    entry.max_per_window = Math.max(entry.max_per_window, n);
  }
  return { over, perClass, rateLimited: log.filter((r) => r.status === 429) };
}
