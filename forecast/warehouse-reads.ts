import type { Bookkeeping, Destination, StateReads } from '../connectors/destination.js';

/**
 * What the forecast may ask of the warehouse: reads only. The type has no write, no `prepare()` (DDL):
 * the `plan` command is handed this, not the destination, so it cannot change what it forecasts.
 */
export type ForecastReads = Pick<
  StateReads,
  | 'readCheckpoint'
  | 'listCheckpoints'
  | 'storedVersions'
  | 'staleThreads'
  | 'freshness'
  | 'liveRows'
  | 'select'
> & {
  /** The items set aside (`_rejected`): what the run reads again. */
  readonly bookkeeping: Pick<Bookkeeping, 'openRejections'>;
};

/**
 * A warehouse no sync has written (no ledger table, or no warehouse configured) holds nothing: no
 * checkpoint, no row. Its reads answer that without a query, since the tables they would read do not exist.
 */
export const NOTHING_STORED: ForecastReads = {
  readCheckpoint: async () => null,
  listCheckpoints: async () => [],
  bookkeeping: { openRejections: async () => [] },
  storedVersions: async () => new Map(),
  staleThreads: async () => [],
  freshness: async () => ({
    tickets: { live: 0, oldestVerifiedAt: null },
    threads: { live: 0, unread: 0, oldestVerifiedAt: null },
  }),
  liveRows: async () => [],
  select: async () => [],
};

/** The reads of `destination`, or NOTHING_STORED when no sync has prepared it yet (checked read-only). */
export async function forecastReadsOf(destination: Destination | null): Promise<ForecastReads> {
  if (destination === null || !(await destination.bookkeeping.hasLedger())) return NOTHING_STORED;
  return {
    readCheckpoint: (stream, scope) => destination.readCheckpoint(stream, scope),
    listCheckpoints: (filter) => destination.listCheckpoints(filter),
    bookkeeping: { openRejections: () => destination.bookkeeping.openRejections() },
    storedVersions: (table, ids) => destination.storedVersions(table, ids),
    staleThreads: (verifiedBefore, limit) => destination.staleThreads(verifiedBefore, limit),
    freshness: () => destination.freshness(),
    liveRows: (table, columns, filter) => destination.liveRows(table, columns, filter),
    select: (build) => destination.select(build),
  };
}
