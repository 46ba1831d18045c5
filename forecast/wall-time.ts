import { SPEC_LIMITS } from '../connectors/support-api/index.js';
import { type Config, QUEUED_ROUTE_CLASSES, type QueuedRouteClass } from '../schemas/config.js';
import type { ClassForecast } from '../schemas/forecast.js';

/**
 * The run's own overhead over the pace of its binding class, from `npm run bench:budget -- --window-ms 60000`
 * (bench/budget.ts; the figures and the world in bench/RESULTS.md, "The rate budget"): `ratio` is the full
 * sync's time over the detail class's lower bound, `allowance` the class's limit over the pace its task
 * queue dispatched at. The key's budget workflow spends every window whole, so the forecast keeps only the rest,
 * `ratio / allowance`: the run's first and last pages, the writes, the bookkeeping. Re-run the bench and
 * update both when the run's overhead changes.
 */
export const BENCH_BUDGET_MEASURED = {
  ratio: 1.032,
  allowance: 1.021,
  routeClass: 'detail',
  source: 'npm run bench:budget -- --window-ms 60000',
} as const;

/** A class's budget as the run will meet it: the key's limit per window, and the pace it is spent at. */
interface ClassBudget {
  limit: number;
  windowMs: number;
  /** Requests a second the key's budget workflow lets the fleet send: `floor(limit × share)` a window. */
  dispatchPerSecond: number;
}

/** The run's overhead beyond its pacing, as bench:budget measured it. */
export const MEASURED_RESIDUAL = BENCH_BUDGET_MEASURED.ratio / BENCH_BUDGET_MEASURED.allowance;

/**
 * Each class's budget with the configuration: SUPPORT_API_RATE_LIMITS per SUPPORT_API_RATE_WINDOW, of which
 * the key's budget workflow spends `floor(limit × share)` every window; with the limits `off`, the spec's
 * limits at one minute — the pace of a real key.
 */
export function classBudgets(config: Config): {
  budgets: Record<QueuedRouteClass, ClassBudget>;
  from: 'configured' | 'spec';
} {
  const configured = config.SUPPORT_API_RATE_LIMITS;
  const share = config.SUPPORT_API_RATE_SHARE;
  const budgetOf = (limit: number, windowMs: number): ClassBudget => ({
    limit,
    windowMs,
    dispatchPerSecond: Math.max(1, Math.floor(limit * share + 1e-9)) / (windowMs / 1000),
  });
  const budgets = Object.fromEntries(
    QUEUED_ROUTE_CLASSES.map((c) => [
      c,
      configured
        ? budgetOf(configured[c], config.SUPPORT_API_RATE_WINDOW)
        : budgetOf(SPEC_LIMITS[c].limit, SPEC_LIMITS[c].windowMs),
    ]),
  ) as Record<QueuedRouteClass, ClassBudget>;
  return { budgets, from: configured ? 'configured' : 'spec' };
}

/** Time a class's requests take at its pace, with the measured residual. */
export function expectedMs(requests: number, budget: ClassBudget): number {
  return (requests / budget.dispatchPerSecond) * 1000 * MEASURED_RESIDUAL;
}

/**
 * Per class: the lower bound (requests / limit × window), the expected time, and the share of its budget
 * over the run's expected wall time left to other clients of the key; the binding class is the one whose
 * requests take longest, and it sets the wall time.
 */
export function wallTime(
  requests: Record<QueuedRouteClass, { requests: number; atLeast: number }>,
  budgets: Record<QueuedRouteClass, ClassBudget>,
) {
  const perClass = Object.fromEntries(
    QUEUED_ROUTE_CLASSES.map((c) => {
      const b = budgets[c];
      return [
        c,
        {
          requests: requests[c].requests,
          at_least: requests[c].atLeast,
          limit: b.limit,
          window_ms: b.windowMs,
          lower_bound_ms: (requests[c].requests / b.limit) * b.windowMs,
          expected_ms: expectedMs(requests[c].requests, b),
          share_left: 1,
        },
      ];
    }),
  ) as Record<QueuedRouteClass, ClassForecast>;
  const binding = QUEUED_ROUTE_CLASSES.reduce((a, c) =>
    perClass[c].expected_ms > perClass[a].expected_ms ? c : a,
  );
  const expected = perClass[binding].expected_ms;
  const lowerBound = Math.max(...QUEUED_ROUTE_CLASSES.map((c) => perClass[c].lower_bound_ms));
  for (const c of QUEUED_ROUTE_CLASSES) {
    const budgetOverRun = (perClass[c].limit * expected) / perClass[c].window_ms;
    perClass[c].share_left =
      budgetOverRun > 0 ? Math.min(1, Math.max(0, 1 - perClass[c].requests / budgetOverRun)) : 1;
  }
  const ratio = lowerBound > 0 ? expected / lowerBound : 1;
  return {
    classes: perClass,
    binding,
    wall: {
      lower_bound_ms: lowerBound,
      expected_ms: expected,
      ratio,
      ratio_source:
        `the ${binding} class's budget, spent whole every window, × ${MEASURED_RESIDUAL.toFixed(3)}, the run's overhead measured by ` +
        `${BENCH_BUDGET_MEASURED.source} (${BENCH_BUDGET_MEASURED.ratio} there, forecast/wall-time.ts)`,
    },
  };
}
