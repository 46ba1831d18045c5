import { STREAMS, type StreamName } from './streams.js';
import type { RowInputs, TableName } from './warehouse.js';

/**
 * Freshness: how far the warehouse lags the source, per stream — the newest stamp the reader has seen at the
 * source minus the newest stamp the warehouse holds. A stream's stamp is the field of its items that says how
 * recent an item is; it has the same name on the API item and in the warehouse column. Reference snapshots
 * (views, tags, teams, agents, the metric catalog) and report snapshots carry no such field: they are read
 * whole every run, so only when they were last read says how current they are.
 */

/** The named fields of a table's API items (none for the report tables, which hold query results). */
type ItemFieldOf<T extends TableName> = RowInputs[T] extends { item: infer I } ? NamedKeys<I> : never;
/** The keys an object type names (an open item also has an index signature, which would admit any key). */
type NamedKeys<I> = keyof { [K in keyof I as string extends K ? never : K]: I[K] } & string;
type StampOf<S extends StreamName> = ItemFieldOf<(typeof STREAMS)[S]['table']>;

/**
 * The stamp of each stream that has one. Tickets: `updated_at` (every change moves it); messages:
 * `created_at` (they have no other time); CSAT surveys: `sent_at` (the export's by-sent pass reads every
 * survey once by it); agent sessions: `session_start` (the export windows are cut by it).
 */
export const FRESHNESS_STAMPS = {
  tickets: 'updated_at',
  ticket_messages: 'created_at',
  csat_surveys: 'sent_at',
  agent_sessions: 'session_start',
} as const satisfies { readonly [S in StreamName]?: StampOf<S> };

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
