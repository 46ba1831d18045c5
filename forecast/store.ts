import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { QUEUED_ROUTE_CLASSES } from '../schemas/config.js';
import { Forecast, type ForecastComparison } from '../schemas/forecast.js';
import type { SyncMode } from '../schemas/run-input.js';
import type { StreamName } from '../schemas/streams.js';

/**
 * The last forecast `plan` made, kept for the next run of the same kind to compare with (a local file: the
 * plan writes nothing to the warehouse, and the run's workflow need not know). One file per data directory;
 * a run takes it — reads and removes it — so a forecast is compared with the one run that followed it.
 */
export const FORECAST_FILE = 'forecast.json';

export function saveForecast(dir: string, forecast: Forecast): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, FORECAST_FILE);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(forecast, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${path}.tmp`, path);
  return path;
}

/** What a run is, as far as a forecast must match it. */
export interface RunIdentity {
  target: string;
  mode: SyncMode;
  streams: readonly StreamName[];
  range: { from: string; before: string } | null;
}

/**
 * The stored forecast of this run, removed from the store; null when there is none, it is unreadable, or it
 * was made for another run (another source, key, warehouse, mode, streams or range), which stays stored.
 */
export function takeForecast(dir: string, run: RunIdentity): Forecast | null {
  const path = join(dir, FORECAST_FILE);
  let forecast: Forecast;
  try {
    forecast = Forecast.parse(JSON.parse(readFileSync(path, 'utf8')));
  } catch {
    return null;
  }
  const same =
    forecast.target === run.target &&
    forecast.mode === run.mode &&
    [...forecast.streams].sort().join() === [...run.streams].sort().join() &&
    forecast.range?.from === run.range?.from &&
    forecast.range?.before === run.range?.before;
  if (!same) return null;
  rmSync(path, { force: true });
  return forecast;
}

/** Relative error of a forecast figure: (forecast − actual) / actual; null when the actual is 0. */
const errorOf = (forecast: number, actual: number) =>
  actual === 0 ? (forecast === 0 ? 0 : null) : Number(((forecast - actual) / actual).toFixed(4));

/** The run's requests per class and wall time next to the forecast's (the summary's `forecast`). */
export function compareWithRun(
  forecast: Forecast,
  actual: { requests: Partial<Record<string, { requests: number }>>; durationMs: number },
): ForecastComparison {
  return {
    made_at: forecast.made_at,
    requests: Object.fromEntries(
      QUEUED_ROUTE_CLASSES.map((c) => {
        const predicted = forecast.classes[c].requests;
        const measured = actual.requests[c]?.requests ?? 0;
        return [c, { forecast: predicted, actual: measured, error: errorOf(predicted, measured) }];
      }),
    ) as ForecastComparison['requests'],
    wall_ms: {
      lower_bound: Math.round(forecast.wall.lower_bound_ms),
      forecast: Math.round(forecast.wall.expected_ms),
      actual: actual.durationMs,
      error: errorOf(forecast.wall.expected_ms, actual.durationMs) ?? 0,
    },
  };
}
