import type { Bookkeeping, SqlReader } from '../connectors/destination.js';
import { openRejectedRaw } from '../connectors/queries/rejected.js';
import { lastCompleteReads } from '../connectors/queries/runs.js';
import { newestLiveStamps } from '../connectors/queries/stamps.js';
import {
  FRESH_STREAMS,
  FRESHNESS_STAMPS,
  type FreshStream,
  freshTableOf,
  isFreshStream,
  newestStampMs,
} from '../schemas/freshness.js';

/*
 * Freshness per stream (schemas/freshness.ts): the newest stamp the reader saw at the source minus the newest
 * the warehouse holds, and when the stream was last read. The worker's metrics know the source side live;
 * `status`, which only reads the warehouse, finds it again there: every item a reader saw is either stored
 * or set aside in `_rejected`, so the newest of both is the newest the source served.
 */

type Reader = SqlReader;

/**
 * The streams with a stamp whose table has items set aside in `_rejected` and not stored since — read from
 * bookkeeping only (Bookkeeping.openRejections: on BigQuery a table read of `_rejected`, no query job; on
 * PostgreSQL one aggregate over `_rejected`), never from a stream's own table. The worker's metrics ask it
 * once a minute (worker/metrics.ts).
 */
export async function streamsWithOpenSetAside(
  bookkeeping: Pick<Bookkeeping, 'openRejections'>,
): Promise<Set<FreshStream>> {
  const streamOfTable = new Map(FRESH_STREAMS.map((s) => [freshTableOf(s) as string, s]));
  const open = new Set<FreshStream>();
  for (const group of await bookkeeping.openRejections()) {
    const stream = streamOfTable.get(group.table_name);
    if (stream) open.add(stream);
  }
  return open;
}

const msOf = (value: unknown): number | null => {
  const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
  return Number.isFinite(ms) ? ms : null;
};

/**
 * The newest stamp of the live rows of every stream with a stamp (epoch ms; null: no row). One statement, an
 * aggregate per table over one column (the tables have an index on it in PostgreSQL). For `status`, on
 * demand: on BigQuery it bills at least 10 MB per table, which is why the metrics never run it.
 */
export async function warehouseNewest(warehouse: Reader): Promise<Record<FreshStream, number | null>> {
  const stamps = await newestLiveStamps(
    warehouse,
    FRESH_STREAMS.map((stream) => ({
      name: stream,
      table: freshTableOf(stream),
      column: FRESHNESS_STAMPS[stream],
    })),
  );
  return Object.fromEntries(FRESH_STREAMS.map((s) => [s, msOf(stamps.get(s))])) as Record<
    FreshStream,
    number | null
  >;
}

/** The newest stamp among items set aside in `_rejected` and not stored since, per stream (epoch ms). */
async function setAsideNewest(warehouse: Reader): Promise<Partial<Record<FreshStream, number>>> {
  const tables = new Map(FRESH_STREAMS.map((s) => [freshTableOf(s) as string, s]));
  const rows = await openRejectedRaw(warehouse, [...tables.keys()]);
  const newest: Partial<Record<FreshStream, number>> = {};
  for (const row of rows) {
    const stream = tables.get(String(row['table_name']));
    if (!stream) continue;
    const ms = newestStampMs(stream, [parsedJson(row['raw'])]);
    if (ms !== null && ms > (newest[stream] ?? Number.NEGATIVE_INFINITY)) newest[stream] = ms;
  }
  return newest;
}

/** A JSON column's value: an object already (PostgreSQL) or its text (BigQuery); unparseable text is null. */
function parsedJson(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return null;
  }
}

/**
 * When each stream was last read completely by a run that reads up to its start (incremental or full
 * refresh; a backfill or a replay re-reads the past): the newest end of a succeeded window (epoch ms).
 */
async function lastReads(warehouse: Reader): Promise<Partial<Record<FreshStream, number>>> {
  const reads: Partial<Record<FreshStream, number>> = {};
  for (const { stream, lastRead } of await lastCompleteReads(warehouse, FRESH_STREAMS)) {
    const ms = msOf(lastRead);
    if (isFreshStream(stream) && ms !== null) reads[stream] = ms;
  }
  return reads;
}

/** How far the warehouse lags what the reader saw (ms, never negative); null when a side is unknown. */
export function lagMs(sourceNewestMs: number | null, warehouseNewestMs: number | null): number | null {
  if (sourceNewestMs === null || warehouseNewestMs === null) return null;
  return Math.max(0, sourceNewestMs - warehouseNewestMs);
}

/** One stream's freshness as `status` prints it (`--json`: these keys). */
export interface StreamFreshness {
  stream: FreshStream;
  /** The stamp field compared (`updated_at`, `created_at`, `sent_at`, `session_start`). */
  stamp: string;
  source_newest: string | null;
  warehouse_newest: string | null;
  /** source_newest − warehouse_newest, never negative; null when either is unknown. */
  lag_seconds: number | null;
  last_read_at: string | null;
  read_age_seconds: number | null;
  /**
   * Over the target when the warehouse lags the source by more than it, or when the stream was not read
   * completely within it (what the source did since is unknown), or never.
   */
  over_slo: boolean;
  reasons: string[];
}

/** A stream's freshness against the target (`sloMs`), from the two newest stamps and its last read. */
export function assessFreshness(input: {
  stream: FreshStream;
  sourceNewestMs: number | null;
  warehouseNewestMs: number | null;
  lastReadMs: number | null;
  nowMs: number;
  sloMs: number;
}): StreamFreshness {
  const { stream, sourceNewestMs, warehouseNewestMs, lastReadMs, nowMs, sloMs } = input;
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  const lag = lagMs(sourceNewestMs, warehouseNewestMs);
  const age = lastReadMs === null ? null : Math.max(0, nowMs - lastReadMs);
  const reasons: string[] = [];
  if (lag !== null && lag > sloMs) reasons.push('lag');
  if (age === null) reasons.push('never read');
  else if (age > sloMs) reasons.push('not read within the target');
  return {
    stream,
    stamp: FRESHNESS_STAMPS[stream],
    source_newest: iso(sourceNewestMs),
    warehouse_newest: iso(warehouseNewestMs),
    lag_seconds: lag === null ? null : lag / 1000,
    last_read_at: iso(lastReadMs),
    read_age_seconds: age === null ? null : age / 1000,
    over_slo: reasons.length > 0,
    reasons,
  };
}

/** Every stream's freshness, read from the warehouse alone (for `status`). */
export async function streamFreshness(
  warehouse: Reader,
  sloMs: number,
  nowMs: number,
): Promise<StreamFreshness[]> {
  const [stored, setAside, reads] = await Promise.all([
    warehouseNewest(warehouse),
    setAsideNewest(warehouse),
    lastReads(warehouse),
  ]);
  return FRESH_STREAMS.map((stream) => {
    const warehouseNewestMs = stored[stream];
    const newestKnown = [warehouseNewestMs, setAside[stream] ?? null].filter(
      (ms): ms is number => ms !== null,
    );
    return assessFreshness({
      stream,
      sourceNewestMs: newestKnown.length > 0 ? Math.max(...newestKnown) : null,
      warehouseNewestMs,
      lastReadMs: reads[stream] ?? null,
      nowMs,
      sloMs,
    });
  });
}
