import { SPEC_LIMITS } from '../connectors/support-api/index.js';
import { type Config, QUEUED_ROUTE_CLASSES, type QueuedRouteClass } from '../schemas/config.js';
import type { ClassForecast } from '../schemas/forecast.js';
import { classRatesOf, dispatchRate } from '../worker/workers.js';

/**
 * How much slower than its lower bound a rate-bound run is, measured: `npm run bench:budget -- --window-ms
 * 60000` (bench/budget.ts; bench/RESULTS.md, "The rate budget") — a full sync of 2,000 tickets with a year of exports,
 * the spec's limits at their real pace, detail-bound — took 1.032 × the detail class's lower bound with 1
 * and with 3 worker processes. Most of it is the room the class queues leave for Temporal's burst and
 * dispatch jitter (worker/workers.ts `dispatchRate`: 116.6 of 120 detail requests a minute then, 1.029;
 * 117.5 since issue 22, 1.021); the rest is the run's own overhead (1.003 then; computed against today's
 * rate it reads 1.011 until bench:budget is measured again). The forecast keeps that rest and recomputes the allowance for the
 * configured window and each class, since a compressed window or a small limit (analytics: 10) leaves far
 * more room than the detail class at one minute. Re-measure with the bench and update both figures.
 */
export const BENCH_BUDGET_MEASURED = {
  ratio: 1.032,
  routeClass: 'detail',
  limit: 120,
  windowMs: 60_000,
  source: 'npm run bench:budget -- --window-ms 60000',
} as const;

/** A class's budget as the run will meet it: the key's limit per window, and its queue's dispatch rate. */
interface ClassBudget {
  limit: number;
  windowMs: number;
  /** Activities a second the class's task queue dispatches (worker/workers.ts). */
  dispatchPerSecond: number;
}

/** Limit over what the queue dispatches in a window: the share of the limit the run cannot use. */
const allowance = (b: ClassBudget) => b.limit / ((b.dispatchPerSecond * b.windowMs) / 1000);

/** The run's overhead beyond the queues' allowance, as bench:budget measured it. */
export const MEASURED_RESIDUAL =
  BENCH_BUDGET_MEASURED.ratio /
  allowance({
    limit: BENCH_BUDGET_MEASURED.limit,
    windowMs: BENCH_BUDGET_MEASURED.windowMs,
    dispatchPerSecond: dispatchRate(BENCH_BUDGET_MEASURED.limit, BENCH_BUDGET_MEASURED.windowMs, 1),
  });

/**
 * Each class's budget with the configuration: SUPPORT_API_RATE_LIMITS per SUPPORT_API_RATE_WINDOW
 * (ANALYTICS_REQUESTS_PER_MINUTE overriding analytics), dispatched as the workers will (`classRatesOf`);
 * with the limits `off`, the spec's limits at one minute — the pace of a real key.
 */
export function classBudgets(config: Config): {
  budgets: Record<QueuedRouteClass, ClassBudget>;
  from: 'configured' | 'spec';
} {
  const configured = config.SUPPORT_API_RATE_LIMITS;
  const rates = config.SUPPORT_API_BUDGET === 'windows' ? fleetRatesOf(config) : classRatesOf(config);
  const budgets = Object.fromEntries(
    QUEUED_ROUTE_CLASSES.map((c) => {
      if (!configured || !rates) {
        const spec = SPEC_LIMITS[c];
        return [
          c,
          {
            ...spec,
            dispatchPerSecond: dispatchRate(spec.limit, spec.windowMs, config.SUPPORT_API_RATE_SHARE),
          },
        ];
      }
      const perMinute = c === 'analytics' ? config.ANALYTICS_REQUESTS_PER_MINUTE : undefined;
      return [
        c,
        perMinute === undefined
          ? { limit: configured[c], windowMs: config.SUPPORT_API_RATE_WINDOW, dispatchPerSecond: rates[c] }
          : { limit: perMinute, windowMs: 60_000, dispatchPerSecond: rates[c] },
      ];
    }),
  ) as Record<QueuedRouteClass, ClassBudget>;
  return { budgets, from: configured ? 'configured' : 'spec' };
}

/**
 * Under the fleet budget (SUPPORT_API_BUDGET=windows) a class spends `floor(limit × share)` of every
 * window, with no allowance for a limiter's burst: its rate is that budget over the window.
 */
function fleetRatesOf(config: Config): Record<QueuedRouteClass, number> | null {
  const limits = config.SUPPORT_API_RATE_LIMITS;
  if (!limits) return null;
  const share = config.SUPPORT_API_RATE_SHARE;
  const perSecond = (limit: number, windowMs: number) =>
    Math.max(1, Math.floor(limit * share + 1e-9)) / (windowMs / 1000);
  const rates = Object.fromEntries(
    QUEUED_ROUTE_CLASSES.map((c) => [c, perSecond(limits[c], config.SUPPORT_API_RATE_WINDOW)]),
  ) as Record<QueuedRouteClass, number>;
  if (config.ANALYTICS_REQUESTS_PER_MINUTE !== undefined)
    rates.analytics = perSecond(config.ANALYTICS_REQUESTS_PER_MINUTE, 60_000);
  return rates;
}

/** Time a class's requests take at its queue's dispatch rate, with the measured residual. */
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
        `the ${binding} class's allowance at this window and limit (1 under the fleet budget, else worker/workers.ts dispatchRate: ` +
        `${allowance(budgets[binding]).toFixed(3)}) × ${MEASURED_RESIDUAL.toFixed(3)}, the run's overhead measured by ` +
        `${BENCH_BUDGET_MEASURED.source} (${BENCH_BUDGET_MEASURED.ratio} there, forecast/wall-time.ts)`,
    },
  };
}
