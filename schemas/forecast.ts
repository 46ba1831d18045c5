import { z } from 'zod';
import { SyncMode } from './run-input.js';
import { ExportPass, STREAM_ROUTE_CLASSES, StreamName } from './streams.js';

/**
 * The forecast of a run (`plan`, forecast/): what it will request per route class with the current
 * settings, the wall time that costs at the key's limits, and how much of each class's budget is left to
 * other clients of the key meanwhile. Printed by `plan --json`, stored for the next run of the same kind,
 * which puts its own figures next to it in its summary (`ForecastComparison`).
 */

const Instant = z.iso.datetime({ offset: true });
const Count = z.number().int().nonnegative();
const Ms = z.number().nonnegative();

export const RouteClass = z.enum(STREAM_ROUTE_CLASSES);

/** One source of requests: a stream's pages, the preflight, the reconciliation's report query… */
export const ForecastItem = z.object({
  /** The stream or export pass it reads, or `preflight`, `reconciliation`. */
  source: z.string().min(1),
  route_class: RouteClass,
  what: z.string().min(1),
  requests: Count,
  /** Requests that are certain (an export window costs a page even when empty); the rest is estimated. */
  at_least: Count,
  /** How the figure is known (counted by the sweep, read from the warehouse, estimated from a probe…). */
  basis: z.string().min(1),
});
export type ForecastItem = z.infer<typeof ForecastItem>;

/** Where a window's item count comes from. */
export const WindowBasis = z.enum([
  /** The probe page read the whole window: exact at the time of the plan. */
  'probe',
  /** Rows the warehouse holds for the window (scaled where it covers only part of it). */
  'warehouse',
  /** The probe's density (items per ticket or per day) times the window's tickets or days. */
  'density',
]);

export const ForecastWindow = z.object({
  window_start: Instant,
  window_end: Instant,
  items: Count,
  pages: Count,
  basis: WindowBasis,
});
export type ForecastWindow = z.infer<typeof ForecastWindow>;

export const ForecastPass = z.object({
  pass: ExportPass,
  windows: z.array(ForecastWindow),
  /** Windows an earlier backfill completed (skipped without `--force`). */
  skipped: Count,
  /** The pass that reads this one's range (FIRST_READ_COVERED_BY): its windows are then only re-reads. */
  covered_by: ExportPass.optional(),
  /** The probe page, when one was read: its window, how many items it held and whether that was all. */
  probe: z
    .object({ window_start: Instant, window_end: Instant, items: Count, complete: z.boolean() })
    .nullable(),
});
export type ForecastPass = z.infer<typeof ForecastPass>;

/** The figures of one route class over the run. */
export const ClassForecast = z.object({
  requests: Count,
  at_least: Count,
  /** The key's limit: requests per `window_ms`. */
  limit: z.number().positive(),
  window_ms: Ms,
  /** requests / limit × window: no run of these requests can be faster. */
  lower_bound_ms: Ms,
  /** At the rate the class's task queue dispatches, times the bench's measured residual (see `wall`). */
  expected_ms: Ms,
  /** Share of the class's budget over the expected wall time that the run leaves to other clients. */
  share_left: z.number().min(0).max(1),
});
export type ClassForecast = z.infer<typeof ClassForecast>;

export const Forecast = z.object({
  made_at: Instant,
  mode: SyncMode.exclude(['replay']),
  /** In words: `first sync (whole history)`, `incremental run`, `full refresh`, `backfill`. */
  kind: z.string(),
  streams: z.array(StreamName),
  range: z.object({ from: Instant, before: Instant }).nullable(),
  /** Which source, key and warehouse it was made for (a hash: no URL, key or password in it). */
  target: z.string(),
  settings: z.object({
    page_size: Count,
    window_ms: Ms,
    lookback_ms: Ms,
    thread_lookback_ms: Ms,
    thread_reverify_per_run: Count,
    /** Whether the limits are the configured ones, or the spec's (SUPPORT_API_RATE_LIMITS=off). */
    limits_from: z.enum(['configured', 'spec']),
  }),
  tickets: z.object({
    listed: Count,
    list_pages: Count,
    oldest_created_at: Instant.nullable(),
    threads: Count,
  }),
  history_start: Instant.nullable(),
  passes: z.array(ForecastPass),
  items: z.array(ForecastItem),
  classes: z.record(RouteClass, ClassForecast),
  binding: RouteClass,
  wall: z.object({
    lower_bound_ms: Ms,
    expected_ms: Ms,
    /** expected / lower bound, and where the measured part of it comes from. */
    ratio: z.number().positive(),
    ratio_source: z.string(),
  }),
  /** What making the forecast cost, per class: the sweep's list pages and the probe pages. */
  cost: z.record(RouteClass, Count),
});
export type Forecast = z.infer<typeof Forecast>;

/** A finished run's figures next to its forecast (the run summary's `forecast`). */
export const ForecastComparison = z.object({
  made_at: Instant,
  requests: z.record(RouteClass, z.object({ forecast: Count, actual: Count, error: z.number().nullable() })),
  wall_ms: z.object({ lower_bound: Ms, forecast: Ms, actual: Ms, error: z.number() }),
});
export type ForecastComparison = z.infer<typeof ForecastComparison>;
