import type { StreamName } from '../schemas/streams.js';
import type { SyncRunRecord, TableName } from '../schemas/warehouse.js';

/**
 * What the activities tell whoever watches the sync — the worker's metrics (worker/metrics.ts) — as it
 * happens: pages read from the source, rows committed to the warehouse, runs and windows recorded in the
 * ledger. Calls are synchronous and cheap; watching never slows, fails or changes a page.
 */
export interface SyncObserver {
  /**
   * A page of `stream` came from the source. `newestMs`: the newest freshness stamp among everything it
   * served, stored or set aside (schemas/freshness.ts; null when none or the stream has no stamp).
   */
  pageRead(stream: StreamName, newestMs: number | null): void;
  /**
   * Rows committed to `table` (and items set aside in `_rejected`). `newestMs`: the newest stamp among the
   * page's stored items — the warehouse now holds at least that. `setAsideNewestMs`: the newest stamp among
   * the items set aside (null or absent when none, or none has a stamp).
   */
  rowsWritten(write: {
    stream: StreamName;
    table: TableName;
    rows: number;
    rejected: number;
    newestMs: number | null;
    setAsideNewestMs?: number | null;
  }): void;
  /** A run or window record was written to `_sync_runs`. */
  runRecorded(run: SyncRunRecord): void;
}
