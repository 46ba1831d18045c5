import { STREAMS, type StreamName } from './streams.js';
import type { TableName } from './warehouse.js';

/**
 * Freshness: how far the warehouse lags the source, per stream — the newest stamp the reader has seen at the
 * source minus the newest stamp the warehouse holds. A stream's stamp is the field of its items that says how
 * recent an item is; it has the same name on the API item and in the warehouse column. Reference snapshots
 * (views, tags, teams, agents, the metric catalog) and report snapshots carry no such field: they are read
 * whole every run, so only when they were last read says how current they are.
 */

/** The streams whose items carry a stamp (streams/<name>.ts `freshness`). */
type StampedStream = {
  [S in StreamName]: (typeof STREAMS)[S] extends { readonly freshness: string } ? S : never;
}[StreamName];

/** The stamp of each stream that has one, from its definition. */
export const FRESHNESS_STAMPS = Object.fromEntries(
  Object.values(STREAMS).flatMap((s) =>
    'freshness' in s && s.freshness !== undefined ? [[s.name, s.freshness]] : [],
  ),
) as { readonly [S in StampedStream]: string };

export type FreshStream = keyof typeof FRESHNESS_STAMPS;
export const FRESH_STREAMS = Object.keys(FRESHNESS_STAMPS) as FreshStream[];

export function isFreshStream(stream: string): stream is FreshStream {
  return Object.hasOwn(FRESHNESS_STAMPS, stream);
}

/** The warehouse table of a stream with a stamp. */
export function freshTableOf(stream: FreshStream): TableName {
  return STREAMS[stream].table;
}

/**
 * The newest stamp (epoch ms) among items of `stream` — parsed items, or raw JSON objects the reader set
 * aside, whose stamp may be missing or broken (then ignored); null when there is none or the stream has no
 * stamp.
 */
export function newestStampMs(stream: StreamName, items: readonly unknown[]): number | null {
  if (!isFreshStream(stream)) return null;
  const field = FRESHNESS_STAMPS[stream];
  let newest: number | null = null;
  for (const item of items) {
    const value = item !== null && typeof item === 'object' ? (item as Record<string, unknown>)[field] : null;
    const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
    if (Number.isFinite(ms) && (newest === null || ms > newest)) newest = ms;
  }
  return newest;
}
