import type { Logger } from 'pino';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { SyncObserver } from '../activities/observer.js';
import type { RateClassStats } from '../connectors/support-api/index.js';
import { FRESH_STREAMS, type FreshStream, isFreshStream } from '../schemas/freshness.js';
import { STREAM_ROUTE_CLASSES, type StreamName } from '../schemas/streams.js';
import { type SyncRunRecord, SyncRunStatus } from '../schemas/warehouse.js';
import { DEFAULT_WORKSPACE } from '../schemas/workspaces.js';
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
  /** The workspace these sources (`openSetAside`, `freshnessSloMs`) are of: the process's own (`default`). */
  workspace?: string;
  /**
   * SYNC_METRICS_WORKSPACE_LABEL and SYNC_METRICS_WORKSPACE_LIMIT: the series of a workspace's sync carry a
   * `workspace` label, of at most `limit` values (WorkspaceLabels). Absent: no such label.
   */
  workspaceLabel?: { limit: number };
}

/** What the metrics read of one workspace when scraped: its bookkeeping, and its freshness target. */
export type WorkspaceMetricsSources = Pick<MetricsSources, 'openSetAside' | 'freshnessSloMs'>;

/**
 * The `workspace` label of the workspaces beyond SYNC_METRICS_WORKSPACE_LIMIT: not a workspace id (an id is a
 * slug, without `_`), so no workspace's own series is ever merged into it.
 */
export const OTHER_WORKSPACES = '_other';

/**
 * The values of the `workspace` label: each workspace its own id, the first `limit` distinct ones asked for,
 * and every one after them OTHER_WORKSPACES — the series of a process grow with its workspaces up to the
 * limit, and no further however many the file lists.
 */
export class WorkspaceLabels {
  readonly #limit: number;
  readonly #named = new Set<string>();
  readonly #others = new Set<string>();

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`limit: ${limit} is not a positive integer`);
    this.#limit = limit;
  }

  /** The label of `workspace`, and whether this is the first time it was put under OTHER_WORKSPACES. */
  of(workspace: string): { label: string; firstOther: boolean } {
    if (this.#named.has(workspace)) return { label: workspace, firstOther: false };
    if (this.#named.size < this.#limit) {
      this.#named.add(workspace);
      return { label: workspace, firstOther: false };
    }
    const firstOther = !this.#others.has(workspace);
    this.#others.add(workspace);
    return { label: OTHER_WORKSPACES, firstOther };
  }
}

/** What the metrics know of one workspace's sync: its sources, and both sides of its freshness. */
class WorkspaceState {
  sources: WorkspaceMetricsSources;
  readonly workspace: string;
  /** The `workspace` label of its series (unused without the label). */
  readonly label: string;
  readonly sourceNewestMs = new Map<FreshStream, number>();
  readonly warehouseNewestMs = new Map<FreshStream, number>();
  /** The newest stamp this process set aside per stream, and when it last set one aside: not known stored. */
  readonly setAside = new Map<FreshStream, { newestMs: number; atMs: number }>();
  bookkeepingReadAt = Number.NEGATIVE_INFINITY;
  bookkeepingRead: Promise<void> | undefined;

  constructor(workspace: string, label: string, sources: WorkspaceMetricsSources) {
    this.workspace = workspace;
    this.label = label;
    this.sources = sources;
  }
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
 * the worst over it (`max by (stream)`). Every workspace the process serves is watched (`forWorkspace`):
 * with `workspaceLabel`, the series of a workspace's sync carry its `workspace` label (bounded,
 * WorkspaceLabels); without, they count every workspace together, a stream's lag the worst of theirs.
 */
export class SyncMetrics implements SyncObserver {
  readonly registry = new Registry();
  readonly #sources: MetricsSources;
  readonly #now: () => number;
  readonly #counted = new Set<string>();
  /** The values of the `workspace` label; undefined without the label. */
  readonly #labels: WorkspaceLabels | undefined;
  readonly #workspaces = new Map<string, WorkspaceState>();
  /** The process's own workspace, the one this object itself observes for (SyncObserver). */
  readonly #own: WorkspaceState;

  readonly #rows: Counter<'table' | 'workspace'>;
  readonly #rejected: Counter<'table' | 'workspace'>;
  readonly #pages: Counter<'stream' | 'workspace'>;
  readonly #windows: Counter<'stream' | 'status' | 'workspace'>;
  readonly #runs: Counter<'mode' | 'status' | 'workspace'>;
  readonly #lastRunStatus: Gauge<'status' | 'workspace'>;
  readonly #runFinished: Gauge<'status' | 'workspace'>;
  readonly #readAt: Gauge<'stream' | 'workspace'>;
  readonly #runtimeUp: Gauge;

  constructor(sources: MetricsSources) {
    this.#sources = sources;
    this.#now = sources.now ?? Date.now;
    this.#labels = sources.workspaceLabel ? new WorkspaceLabels(sources.workspaceLabel.limit) : undefined;
    collectDefaultMetrics({ register: this.registry });
    this.#rows = this.#counter(
      'support_sync_rows_written_total',
      'Rows written to the warehouse (for tickets: new or changed rows), by table',
      this.#withWorkspace(['table']),
    );
    this.#rejected = this.#counter(
      'support_sync_rejected_items_total',
      'Items the source served that were set aside in _rejected (read again by every run until stored), by table',
      this.#withWorkspace(['table']),
    );
    this.#pages = this.#counter(
      'support_sync_pages_read_total',
      'Pages read from the source, by stream',
      this.#withWorkspace(['stream']),
    );
    this.#windows = this.#counter(
      'support_sync_windows_total',
      'Windows that finished, by stream and status (succeeded, failed)',
      this.#withWorkspace(['stream', 'status']),
    );
    this.#runs = this.#counter(
      'support_sync_runs_total',
      'Sync runs that finished, by mode and status (succeeded, incomplete, failed)',
      this.#withWorkspace(['mode', 'status']),
    );
    this.#lastRunStatus = this.#gauge(
      'support_sync_last_run_status',
      'The status of the latest run this worker recorded: 1 for its status, 0 for the others',
      this.#withWorkspace(['status']),
    );
    this.#runFinished = this.#gauge(
      'support_sync_run_finished_timestamp_seconds',
      'When the latest run of each status finished (Unix time)',
      this.#withWorkspace(['status']),
    );
    this.#readAt = this.#gauge(
      'support_sync_source_read_timestamp_seconds',
      'When a page of the stream was last read from the source (Unix time)',
      this.#withWorkspace(['stream']),
    );
    this.#runtimeUp = this.#gauge(
      'support_sync_temporal_runtime_metrics_up',
      "Whether the Temporal SDK's runtime metrics were included in this scrape (1) or could not be read (0)",
    );
    this.#own = this.#stateOf(sources.workspace ?? DEFAULT_WORKSPACE, sources);
    this.#sloGauge();
    this.#mirroredCounters();
    this.#freshnessGauges();
  }

  /**
   * The observer of `workspace`'s activities, on its bookkeeping and with its freshness target (those of a
   * workspace already watched are replaced: its dependencies were built again). Its series carry its
   * `workspace` label when the label is on.
   */
  forWorkspace(workspace: string, sources: WorkspaceMetricsSources): SyncObserver {
    const state = this.#stateOf(workspace, sources);
    return {
      pageRead: (stream, newestMs) => this.#pageRead(state, stream, newestMs),
      rowsWritten: (write) => this.#rowsWritten(state, write),
      runRecorded: (run) => this.#runRecorded(state, run),
    };
  }

  pageRead(stream: StreamName, newestMs: number | null): void {
    this.#pageRead(this.#own, stream, newestMs);
  }

  rowsWritten(write: Parameters<SyncObserver['rowsWritten']>[0]): void {
    this.#rowsWritten(this.#own, write);
  }

  runRecorded(run: SyncRunRecord): void {
    this.#runRecorded(this.#own, run);
  }

  /** Whether the Temporal SDK's own metrics could be read for the scrape they are appended to. */
  runtimeMetricsRead(ok: boolean): void {
    this.#runtimeUp.set(ok ? 1 : 0);
  }

  #stateOf(workspace: string, sources: WorkspaceMetricsSources): WorkspaceState {
    const known = this.#workspaces.get(workspace);
    if (known) {
      known.sources = sources;
      return known;
    }
    const { label, firstOther } = this.#labels?.of(workspace) ?? { label: '', firstOther: false };
    if (firstOther)
      this.#sources.logger.warn(
        { workspace, label: OTHER_WORKSPACES },
        'metrics: more workspaces than SYNC_METRICS_WORKSPACE_LIMIT: this one is counted under the label of the others',
      );
    const state = new WorkspaceState(workspace, label, sources);
    this.#workspaces.set(workspace, state);
    return state;
  }

  /** `labels` with the workspace's label when the label is on; `labels` alone otherwise. */
  #labelsOf<L extends Record<string, string>>(state: WorkspaceState, labels: L): L {
    return this.#labels ? { ...labels, workspace: state.label } : labels;
  }

  #withWorkspace<L extends string>(labelNames: readonly L[]): (L | 'workspace')[] {
    return this.#labels ? [...labelNames, 'workspace'] : [...labelNames];
  }

  #pageRead(state: WorkspaceState, stream: StreamName, newestMs: number | null): void {
    this.#pages.inc(this.#labelsOf(state, { stream }));
    this.#readAt.set(this.#labelsOf(state, { stream }), seconds(this.#now()));
    if (newestMs === null || !isFreshStream(stream)) return;
    raise(state.sourceNewestMs, stream, newestMs);
  }

  #rowsWritten(state: WorkspaceState, write: Parameters<SyncObserver['rowsWritten']>[0]): void {
    this.#rows.inc(this.#labelsOf(state, { table: write.table }), write.rows);
    this.#rejected.inc(this.#labelsOf(state, { table: write.table }), write.rejected);
    const { stream, newestMs } = write;
    if (!isFreshStream(stream)) return;
    // Committed: the warehouse holds at least this.
    if (newestMs !== null) raise(state.warehouseNewestMs, stream, newestMs);
    const setAsideMs = write.setAsideNewestMs ?? null;
    if (setAsideMs !== null) {
      const known = state.setAside.get(stream);
      state.setAside.set(stream, {
        newestMs: Math.max(setAsideMs, known?.newestMs ?? setAsideMs),
        atMs: this.#now(),
      });
    }
  }

  #runRecorded(state: WorkspaceState, run: SyncRunRecord): void {
    if (run.parent_run_id === null) {
      for (const status of SyncRunStatus.options)
        this.#lastRunStatus.set(this.#labelsOf(state, { status }), status === run.status ? 1 : 0);
    }
    if (run.status === 'running' || !this.#firstCount(state, run)) return;
    if (run.parent_run_id === null) {
      this.#runs.inc(this.#labelsOf(state, { mode: run.mode, status: run.status }));
      this.#runFinished.set(
        this.#labelsOf(state, { status: run.status }),
        seconds(Date.parse(run.finished_at ?? '') || this.#now()),
      );
    } else if (run.stream !== null) {
      this.#windows.inc(this.#labelsOf(state, { stream: run.stream, status: run.status }));
    }
  }

  /** Whether this finished record is counted for the first time (an activity retry records it again). */
  #firstCount(state: WorkspaceState, run: SyncRunRecord): boolean {
    const key = `${state.workspace} ${run.run_id} ${run.status}`;
    if (this.#counted.has(key)) return false;
    if (this.#counted.size >= COUNTED_RECORDS_KEPT) this.#counted.clear();
    this.#counted.add(key);
    return true;
  }

  /**
   * The freshness target: the process's SYNC_FRESHNESS_SLO without the label; with it, each workspace's
   * own (a workspace may set its own), the strictest of those under OTHER_WORKSPACES.
   */
  #sloGauge(): void {
    const labelled = this.#labels !== undefined;
    const workspaces = this.#workspaces;
    const own = this.#sources.freshnessSloMs;
    new Gauge({
      name: 'support_sync_freshness_slo_seconds',
      help: 'The freshness target, SYNC_FRESHNESS_SLO',
      labelNames: this.#withWorkspace([]),
      registers: [this.registry],
      collect() {
        this.reset();
        if (!labelled) {
          this.set(seconds(own));
          return;
        }
        const byLabel = new Map<string, number>();
        for (const state of workspaces.values())
          byLabel.set(
            state.label,
            Math.min(state.sources.freshnessSloMs, byLabel.get(state.label) ?? Number.POSITIVE_INFINITY),
          );
        for (const [workspace, ms] of byLabel) this.set({ workspace }, seconds(ms));
      },
    });
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
   * Both sides of freshness and the lag behind the source, when scraped. The warehouse side is what this
   * process knows the warehouse holds: the newest stamp it committed, and the items it set aside once
   * bookkeeping says nothing of their stream is set aside any more (stored since, by any process). No data
   * table is read: a fleet's warehouse side is the newest over its processes (`max by (stream)`). Each
   * workspace's freshness is its own; the series of a label (none without the label, OTHER_WORKSPACES) take
   * the newest stamps and the worst lag of its workspaces.
   */
  #freshnessGauges(): void {
    const refresh = () => this.#refreshFromBookkeeping();
    const workspaces = this.#workspaces;
    const labelsOf = <L extends Record<string, string>>(state: WorkspaceState, labels: L) =>
      this.#labelsOf(state, labels);
    /** Per series (its labels, as JSON), the largest value of a workspace's `value` per stream. */
    const largest = (value: (state: WorkspaceState, stream: FreshStream) => number | null) => {
      const out = new Map<string, { labels: Record<string, string>; value: number }>();
      for (const state of workspaces.values())
        for (const stream of FRESH_STREAMS) {
          const v = value(state, stream);
          if (v === null) continue;
          const labels = labelsOf(state, { stream });
          const key = JSON.stringify(labels);
          out.set(key, { labels, value: Math.max(v, out.get(key)?.value ?? v) });
        }
      return out.values();
    };
    const gauge = (
      name: string,
      help: string,
      value: (state: WorkspaceState, stream: FreshStream) => number | null,
      before: () => Promise<void> = () => Promise.resolve(),
    ) =>
      new Gauge({
        name,
        help,
        labelNames: this.#withWorkspace(['stream']),
        registers: [this.registry],
        async collect() {
          await before();
          this.reset();
          for (const { labels, value: ms } of largest(value)) this.set(labels, seconds(ms));
        },
      });
    gauge(
      'support_sync_source_newest_timestamp_seconds',
      'The newest stamp (updated_at, created_at, sent_at, session_start) the reader has seen at the source, stored or set aside (Unix time)',
      (state, stream) => state.sourceNewestMs.get(stream) ?? null,
    );
    gauge(
      'support_sync_warehouse_newest_timestamp_seconds',
      'The newest stamp (updated_at, created_at, sent_at, session_start) this worker knows the warehouse holds: of the rows it committed, and of items it set aside that have been stored since (Unix time)',
      (state, stream) => state.warehouseNewestMs.get(stream) ?? null,
      refresh,
    );
    gauge(
      'support_sync_freshness_lag_seconds',
      'How far the warehouse lags the source: the newest stamp the reader saw minus the newest in the warehouse (never negative)',
      (state, stream) =>
        lagMs(state.sourceNewestMs.get(stream) ?? null, state.warehouseNewestMs.get(stream) ?? null),
      refresh,
    );
  }

  /** Every workspace's bookkeeping read, where its last answer is old (#refreshWorkspace). */
  async #refreshFromBookkeeping(): Promise<void> {
    await Promise.all([...this.#workspaces.values()].map((state) => this.#refreshWorkspace(state)));
  }

  /**
   * Asks a workspace's bookkeeping which streams have items set aside, when the last answer is older than
   * BOOKKEEPING_REFRESH_MS: an item this process set aside long enough ago (SET_ASIDE_VISIBLE_MS) in a stream
   * with none set aside any more has been stored since, so the warehouse holds its stamp.
   */
  #refreshWorkspace(state: WorkspaceState): Promise<void> {
    if (state.bookkeepingRead) return state.bookkeepingRead;
    if (state.setAside.size === 0) return Promise.resolve();
    if (this.#now() - state.bookkeepingReadAt < BOOKKEEPING_REFRESH_MS) return Promise.resolve();
    const readAt = this.#now();
    state.bookkeepingReadAt = readAt;
    state.bookkeepingRead = state.sources
      .openSetAside()
      .then((open) => {
        for (const [stream, { newestMs, atMs }] of state.setAside) {
          if (open.has(stream) || readAt - atMs < SET_ASIDE_VISIBLE_MS) continue;
          raise(state.warehouseNewestMs, stream, newestMs);
          state.setAside.delete(stream);
        }
      })
      .catch((err: unknown) => {
        // What was known stays; the next scrape after the refresh interval asks again.
        this.#sources.logger.warn(
          { err, ...(state.workspace !== DEFAULT_WORKSPACE ? { workspace: state.workspace } : {}) },
          'metrics: reading the items set aside from bookkeeping failed',
        );
      })
      .finally(() => {
        state.bookkeepingRead = undefined;
      });
    return state.bookkeepingRead;
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
