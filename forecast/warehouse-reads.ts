import type { Bookkeeping, Destination, StateReads } from '../connectors/destination.js';

/**
 * What the forecast may ask of the warehouse: reads only. The type has no write, no `prepare()` (DDL):
 * the `plan` command is handed this, not the destination, so it cannot change what it forecasts.
 */
export type ForecastReads = Pick<
  StateReads,
  'readCheckpoint' | 'listCheckpoints' | 'storedVersions' | 'liveRows' | 'select'
> & {
  /** The items set aside (`_rejected`) and the thread queue: what the run reads again. */
  readonly bookkeeping: Pick<Bookkeeping, 'openRejections' | 'staleThreads' | 'freshness'>;
};

/**
 * A warehouse no sync has written (no ledger table, or no warehouse configured) holds nothing: no
 * checkpoint, no row. Its reads answer that without a query, since the tables they would read do not exist.
 */
export const NOTHING_STORED: ForecastReads = {
  readCheckpoint: async () => null,
  listCheckpoints: async () => [],
  storedVersions: async () => new Map(),
  liveRows: async () => [],
  select: async () => [],
  bookkeeping: {
    openRejections: async () => [],
    staleThreads: async () => [],
    freshness: async () => ({
      tickets: { live: 0, oldestVerifiedAt: null },
      threads: { live: 0, unread: 0, oldestVerifiedAt: null },
    }),
  },
};

/** The reads of `destination`, or NOTHING_STORED when no sync has prepared it yet (checked read-only). */
export async function forecastReadsOf(destination: Destination | null): Promise<ForecastReads> {
  if (destination === null || !(await destination.bookkeeping.hasLedger())) return NOTHING_STORED;
  const { bookkeeping } = destination;
  return {
    readCheckpoint: (stream, scope) => destination.readCheckpoint(stream, scope),
    listCheckpoints: (filter) => destination.listCheckpoints(filter),
    storedVersions: (table, ids) => destination.storedVersions(table, ids),
    liveRows: (table, columns, filter) => destination.liveRows(table, columns, filter),
    select: (build) => destination.select(build),
    bookkeeping: {
      openRejections: () => bookkeeping.openRejections(),
      staleThreads: (verifiedBefore, limit) => bookkeeping.staleThreads(verifiedBefore, limit),
      freshness: () => bookkeeping.freshness(),
    },
  };
}
