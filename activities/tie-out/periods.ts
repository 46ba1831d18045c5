/**
 * The periods a tie-out compares (each UTC day of its window, the whole window, and `now` for snapshots)
 * and the values each side files under them.
 */

export const DAY_MS = 24 * 60 * 60 * 1000;

/** The compared periods: each UTC day from `fromMs` through `todayMs`'s day, and the whole range. */
export interface TieOutWindow {
  readonly fromMs: number;
  /** Midnight UTC of the last (current, partial) day. */
  readonly todayMs: number;
}

export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);

export const days = (w: TieOutWindow): string[] => {
  const out: string[] = [];
  for (let t = w.fromMs; t <= w.todayMs; t += DAY_MS) out.push(dayOf(t));
  return out;
};

export const wholePeriod = (w: TieOutWindow) => `${dayOf(w.fromMs)}..${dayOf(w.todayMs)}`;

/** One side's values: metric id → period (a UTC day, the whole range, or `now`) → value. */
export type MetricValues = Map<string, Map<string, number>>;

export const putValue = (values: MetricValues, metric: string, period: string, value: number) => {
  let byPeriod = values.get(metric);
  if (!byPeriod) {
    byPeriod = new Map();
    values.set(metric, byPeriod);
  }
  byPeriod.set(period, value);
};
