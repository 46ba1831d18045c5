import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FORECAST_FILE, saveForecast, takeForecast } from '../../forecast/store.js';
import {
  BENCH_BUDGET_MEASURED,
  classBudgets,
  MEASURED_RESIDUAL,
  wallTime,
} from '../../forecast/wall-time.js';
import type { Forecast } from '../../schemas/forecast.js';
import { loadConfig } from '../../worker/config.js';

const config = (env: Record<string, string> = {}) =>
  loadConfig({}, undefined, {
    SUPPORT_API_URL: 'https://source.invalid',
    SUPPORT_API_KEY: 'key',
    DESTINATION_URL: 'postgres://u:p@localhost/db',
    ...env,
  });

const requests = (list: number, detail: number, analytics: number, directory: number) => ({
  list: { requests: list, atLeast: list },
  detail: { requests: detail, atLeast: detail },
  analytics: { requests: analytics, atLeast: analytics },
  directory: { requests: directory, atLeast: directory },
});

describe('the forecast wall time', () => {
  it("is the measured residual over the lower bound for the run bench:budget measured (detail-bound, the spec's minute)", () => {
    const { budgets, from } = classBudgets(config());
    expect(from).toBe('configured');
    const { classes, binding, wall } = wallTime(requests(22, 2000, 30, 3), budgets);
    expect(binding).toBe('detail');
    expect(wall.lower_bound_ms).toBeCloseTo(1_000_000, 3); // 2,000 at 120 a minute
    // The budget workflow spends each window whole: only the run's own overhead is left of the measured ratio.
    expect(MEASURED_RESIDUAL).toBeCloseTo(BENCH_BUDGET_MEASURED.ratio / BENCH_BUDGET_MEASURED.allowance, 9);
    expect(wall.ratio).toBeCloseTo(MEASURED_RESIDUAL, 6);
    // Over its expected wall time the detail class has ≈ 2,022 requests of budget: ≈ 22 left to others.
    expect(classes.detail.share_left).toBeCloseTo(1 - 1 / MEASURED_RESIDUAL, 3);
    expect(classes.directory.share_left).toBeGreaterThan(0.99);
  });

  it('under the fleet budget (the default) spends whole windows: only the measured residual is left', () => {
    const { budgets } = classBudgets(config({ SUPPORT_API_RATE_WINDOW: 'PT10S' }));
    expect(budgets.analytics.dispatchPerSecond).toBeCloseTo(1, 6); // 10 a 10-second window
    const { binding, wall } = wallTime(requests(3, 40, 56, 3), budgets);
    expect(binding).toBe('analytics');
    expect(wall.ratio).toBeCloseTo(MEASURED_RESIDUAL, 6);
  });

  it("uses the spec's limits per minute when the configured limits are off", () => {
    const { budgets, from } = classBudgets(config({ SUPPORT_API_RATE_LIMITS: 'off' }));
    expect(from).toBe('spec');
    expect(budgets.analytics).toMatchObject({ limit: 10, windowMs: 60_000 });
    expect(wallTime(requests(0, 0, 10, 0), budgets).wall.lower_bound_ms).toBeCloseTo(60_000, 3);
  });
});

describe('a kept forecast', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const forecast = { target: 't1', streams: ['tickets', 'views'] } satisfies Partial<Forecast>;

  it('is taken once, by a run of the same target, mode, streams and range; another run leaves it kept', () => {
    const dir = mkdtempSync(join(tmpdir(), 'forecast-'));
    dirs.push(dir);
    saveForecast(dir, parsedForecast(forecast));
    const run = {
      target: 't1',
      mode: 'incremental' as const,
      streams: ['views', 'tickets'] as const,
      range: null,
    };
    expect(takeForecast(dir, { ...run, mode: 'full_refresh' })).toBeNull();
    expect(takeForecast(dir, { ...run, target: 't2' })).toBeNull();
    expect(takeForecast(dir, { ...run, streams: ['tickets'] })).toBeNull();
    expect(existsSync(join(dir, FORECAST_FILE))).toBe(true);
    expect(takeForecast(dir, { ...run, streams: [...run.streams] })?.target).toBe('t1');
    expect(existsSync(join(dir, FORECAST_FILE))).toBe(false);
    expect(takeForecast(dir, { ...run, streams: [...run.streams] })).toBeNull();
  });
});

/** A complete forecast object around the fields a test cares about. */
function parsedForecast(fields: Partial<Forecast>): Forecast {
  const { budgets } = classBudgets(config());
  const { classes, binding, wall } = wallTime(requests(1, 1, 1, 1), budgets);
  return {
    made_at: '2026-01-01T00:00:00.000Z',
    mode: 'incremental',
    kind: 'incremental run',
    streams: [],
    range: null,
    target: 't',
    settings: {
      page_size: 100,
      window_ms: 1,
      lookback_ms: 0,
      thread_lookback_ms: 0,
      thread_reverify_per_run: 0,
      limits_from: 'configured',
    },
    tickets: { listed: 0, list_pages: 0, oldest_created_at: null, threads: 0 },
    history_start: null,
    passes: [],
    items: [],
    classes,
    binding,
    wall,
    cost: { list: 0, detail: 0, analytics: 0, directory: 0 },
    ...fields,
  };
}
