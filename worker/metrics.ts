import type { Logger } from 'pino';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { SyncObserver } from '../activities/observer.js';
import type { RateClassStats } from '../connectors/support-api/index.js';
import { FRESH_STREAMS, type FreshStream, isFreshStream } from '../schemas/freshness.js';
import { STREAM_ROUTE_CLASSES, type StreamName } from '../schemas/streams.js';
import { type SyncRunRecord, SyncRunStatus } from '../schemas/warehouse.js';
import { lagMs } from './freshness.js';

/** What the metrics read when scraped, besides what the activities tell them (SyncObserver). */
export interface MetricsSources {
  /** The rate governor's counters per route class (the API client's `rateStats()`). */
  rateStats(): readonly RateClassStats[];
  /**
   * The streams whose table has items set aside and not stored since, from bookkeeping (worker/freshness.ts
   * `streamsWithOpenSetAside`: `_rejected` only, no data table).
   */
  openSetAside(): Promise<ReadonlySet<FreshStream>>;
  /** SYNC_FRESHNESS_SLO, exported so that alert rules compare against the configured target. */
  freshnessSloMs: number;
  logger: Logger;
  now?: () => number;
}

/**
 * How often a scrape may ask bookkeeping which streams have items set aside (one read of `_rejected`; on
 * BigQuery a table read, no job). Between reads, this process's own committed writes move the warehouse side.
 */
const BOOKKEEPING_REFRESH_MS = 60_000;

/**
 * How long after this process set an item aside an answer of `_rejected` is trusted to include it: BigQuery
 * merges staged rows into `_rejected` within a flush interval (10 minutes at most while the process lives,
 * connectors/bigquery/staged-writer.ts), and before that the table read does not see them.
 */
const SET_ASIDE_VISIBLE_MS = 15 * 60_000;

/** Run and window records already counted (a retried `recordRun` activity writes the same record again). */
const COUNTED_RECORDS_KEPT = 10_000;

const seconds = (ms: number) => ms / 1000;

/**
 * The worker's Prometheus metrics, in one registry: what its activities did (SyncObserver: pages, rows,
 * items set aside, runs and windows), the rate governor's counters, and freshness per stream. Every
 * process exports its own counts; Prometheus sums them over a fleet (`sum by (table)`), and freshness is
 * the worst over it (`max by (stream)`).
 */
export class SyncMetrics implements SyncObserver {
  readonly registry = new Registry();
  readonly #sources: MetricsSources;
  readonly #now: () => number;
  readonly #counted = new Set<string>();
  readonly #sourceNewestMs = new Map<FreshStream, number>();
  readonly #warehouseNewestMs = new Map<FreshStream, number>();
  /** The newest stamp this process set aside per stream, and when it last set one aside: not known stored. */
  readonly #setAside = new Map<FreshStream, { newestMs: number; atMs: number }>();
  #bookkeepingReadAt = Number.NEGATIVE_INFINITY;
  #bookkeepingRead: Promise<void> | undefined;

  readonly #rows = this.#counter(
    'support_sync_rows_written_total',
    'Rows written to the warehouse (for tickets: new or changed rows), by table',
    ['table'],
  );
  readonly #rejected = this.#counter(
    'support_sync_rejected_items_total',
    'Items the source served that were set aside in _rejected (read again by every run until stored), by table',
    ['table'],
  );
  readonly #pages = this.#counter('support_sync_pages_read_total', 'Pages read from the source, by stream', [
    'stream',
  ]);
  readonly #windows = this.#counter(
    'support_sync_windows_total',
    'Windows that finished, by stream and status (succeeded, failed)',
    ['stream', 'status'],
  );
  readonly #runs = this.#counter(
    'support_sync_runs_total',
    'Sync runs that finished, by mode and status (succeeded, incomplete, failed)',
    ['mode', 'status'],
  );
  readonly #lastRunStatus = this.#gauge(
    'support_sync_last_run_status',
    'The status of the latest run this worker recorded: 1 for its status, 0 for the others',
    ['status'],
  );
  readonly #runFinished = this.#gauge(
    'support_sync_run_finished_timestamp_seconds',
    'When the latest run of each status finished (Unix time)',
    ['status'],
  );
  readonly #readAt = this.#gauge(
    'support_sync_source_read_timestamp_seconds',
    'When a page of the stream was last read from the source (Unix time)',
    ['stream'],
  );
  readonly #runtimeUp = this.#gauge(
    'support_sync_temporal_runtime_metrics_up',
    "Whether the Temporal SDK's runtime metrics were included in this scrape (1) or could not be read (0)",
  );
  readonly #sourceNewest = this.#gauge(
    'support_sync_source_newest_timestamp_seconds',
    'The newest stamp (updated_at, created_at, sent_at, session_start) the reader has seen at the source, stored or set aside (Unix time)',
    ['stream'],
  );

  constructor(sources: MetricsSources) {
    this.#sources = sources;
    this.#now = sources.now ?? Date.now;
    collectDefaultMetrics({ register: this.registry });
    this.#gauge('support_sync_freshness_slo_seconds', 'The freshness target, SYNC_FRESHNESS_SLO').set(
      seconds(sources.freshnessSloMs),
    );
    this.#mirroredCounters();
    this.#freshnessGauges();
  }

  pageRead(stream: StreamName, newestMs: number | null): void {
    this.#pages.inc({ stream });
    this.#readAt.set({ stream }, seconds(this.#now()));
    if (newestMs === null || !isFreshStream(stream)) return;
    if (newestMs > (this.#sourceNewestMs.get(stream) ?? Number.NEGATIVE_INFINITY)) {
      this.#sourceNewestMs.set(stream, newestMs);
      this.#sourceNewest.set({ stream }, seconds(newestMs));
    }
  }

  rowsWritten(write: Parameters<SyncObserver['rowsWritten']>[0]): void {
    this.#rows.inc({ table: write.table }, write.rows);
    this.#rejected.inc({ table: write.table }, write.rejected);
    const { stream, newestMs } = write;
    if (!isFreshStream(stream)) return;
    // Committed: the warehouse holds at least this.
    if (newestMs !== null) raise(this.#warehouseNewestMs, stream, newestMs);
    const setAsideMs = write.setAsideNewestMs ?? null;
    if (setAsideMs !== null) {
      const known = this.#setAside.get(stream);
      this.#setAside.set(stream, {
        newestMs: Math.max(setAsideMs, known?.newestMs ?? setAsideMs),
        atMs: this.#now(),
      });
    }
  }

  runRecorded(run: SyncRunRecord): void {
    if (run.parent_run_id === null) {
      for (const status of SyncRunStatus.options)
        this.#lastRunStatus.set({ status }, status === run.status ? 1 : 0);
    }
    if (run.status === 'running' || !this.#firstCount(run)) return;
    if (run.parent_run_id === null) {
      this.#runs.inc({ mode: run.mode, status: run.status });
      this.#runFinished.set(
        { status: run.status },
        seconds(Date.parse(run.finished_at ?? '') || this.#now()),
      );
    } else if (run.stream !== null) {
      this.#windows.inc({ stream: run.stream, status: run.status });
    }
  }

  /** Whether the Temporal SDK's own metrics could be read for the scrape they are appended to. */
  runtimeMetricsRead(ok: boolean): void {
    this.#runtimeUp.set(ok ? 1 : 0);
  }

  /** Whether this finished record is counted for the first time (an activity retry records it again). */
  #firstCount(run: SyncRunRecord): boolean {
    const key = `${run.run_id} ${run.status}`;
    if (this.#counted.has(key)) return false;
    if (this.#counted.size >= COUNTED_RECORDS_KEPT) this.#counted.clear();
    this.#counted.add(key);
    return true;
  }

  /** Requests, 429s and rate-limit waits per route class, as the rate governor counts them. */
  #mirroredCounters(): void {
    const mirror = (name: string, help: string, value: (s: RateClassStats) => number) => {
      const sources = this.#sources;
      new Counter({
        name,
        help,
        labelNames: ['route_class'],
        registers: [this.registry],
        collect() {
          // The governor's counters only grow (one governor per key and process): copy them as they are.
          this.reset();
          const stats = new Map(sources.rateStats().map((s) => [s.routeClass as string, s]));
          // The classes the sync reads, and any other that was used (the governor knows every class).
          const used = [...stats.values()].filter((s) => s.requests > 0).map((s) => s.routeClass as string);
          for (const routeClass of new Set([...STREAM_ROUTE_CLASSES, ...used])) {
            const s = stats.get(routeClass);
            this.inc({ route_class: routeClass }, s ? value(s) : 0);
          }
        },
      });
    };
    mirror(
      'support_sync_api_requests_total',
      'Requests sent to the Support API, by route class',
      (s) => s.requests,
    );
    mirror(
      'support_sync_api_rate_limited_total',
      'Responses 429 (rate limited) from the Support API, by route class',
      (s) => s.rateLimited,
    );
    mirror(
      'support_sync_rate_limit_waits_total',
      'Times a request waited for the rate governor, by route class',
      (s) => s.waits,
    );
    mirror(
      'support_sync_rate_limit_wait_seconds_total',
      'Time requests spent waiting for the rate governor, by route class',
      (s) => seconds(s.totalWaitMs),
    );
  }

  /**
   * The warehouse's side of freshness and the lag behind the source, when scraped. The warehouse side is what
   * this process knows the warehouse holds: the newest stamp it committed, and the items it set aside once
   * bookkeeping says nothing of their stream is set aside any more (stored since, by any process). No data
   * table is read: a fleet's warehouse side is the newest over its processes (`max by (stream)`).
   */
  #freshnessGauges(): void {
    const refresh = () => this.#refreshFromBookkeeping();
    const newest = this.#warehouseNewestMs;
    const sourceNewest = this.#sourceNewestMs;
    new Gauge({
      name: 'support_sync_warehouse_newest_timestamp_seconds',
      help: 'The newest stamp (updated_at, created_at, sent_at, session_start) this worker knows the warehouse holds: of the rows it committed, and of items it set aside that have been stored since (Unix time)',
      labelNames: ['stream'],
      registers: [this.registry],
      async collect() {
        await refresh();
        this.reset();
        for (const [stream, ms] of newest) this.set({ stream }, seconds(ms));
      },
    });
    new Gauge({
      name: 'support_sync_freshness_lag_seconds',
      help: 'How far the warehouse lags the source: the newest stamp the reader saw minus the newest in the warehouse (never negative)',
      labelNames: ['stream'],
      registers: [this.registry],
      async collect() {
        await refresh();
        this.reset();
        for (const stream of FRESH_STREAMS) {
          const lag = lagMs(sourceNewest.get(stream) ?? null, newest.get(stream) ?? null);
          if (lag !== null) this.set({ stream }, seconds(lag));
        }
      },
    });
  }

  /**
   * Asks bookkeeping which streams have items set aside, when the last answer is older than
   * BOOKKEEPING_REFRESH_MS: an item this process set aside long enough ago (SET_ASIDE_VISIBLE_MS) in a stream
   * with none set aside any more has been stored since, so the warehouse holds its stamp.
   */
  #refreshFromBookkeeping(): Promise<void> {
    if (this.#bookkeepingRead) return this.#bookkeepingRead;
    if (this.#setAside.size === 0) return Promise.resolve();
    if (this.#now() - this.#bookkeepingReadAt < BOOKKEEPING_REFRESH_MS) return Promise.resolve();
    const readAt = this.#now();
    this.#bookkeepingReadAt = readAt;
    this.#bookkeepingRead = this.#sources
      .openSetAside()
      .then((open) => {
        for (const [stream, { newestMs, atMs }] of this.#setAside) {
          if (open.has(stream) || readAt - atMs < SET_ASIDE_VISIBLE_MS) continue;
          raise(this.#warehouseNewestMs, stream, newestMs);
          this.#setAside.delete(stream);
        }
      })
      .catch((err: unknown) => {
        // What was known stays; the next scrape after the refresh interval asks again.
        this.#sources.logger.warn({ err }, 'metrics: reading the items set aside from bookkeeping failed');
      })
      .finally(() => {
        this.#bookkeepingRead = undefined;
      });
    return this.#bookkeepingRead;
  }

  #counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  #gauge<L extends string>(name: string, help: string, labelNames: readonly L[] = []): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }
}

/** Sets `key` to `value` unless it already holds a larger one. */
function raise<K>(map: Map<K, number>, key: K, value: number): void {
  map.set(key, Math.max(value, map.get(key) ?? value));
}
