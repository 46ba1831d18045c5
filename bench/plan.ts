/**
 * Benchmark of the forecast (`plan`, issue 24): how close it comes to the full sync that follows it —
 * requests per route class (target: within 2 %) and wall time (target: within 15 %) — in two worlds:
 *
 *   npm run bench:plan -- [--window-ms 10000] [--analytics-tickets 40] [--detail-tickets 1000] [--seed 7]
 *
 *  - analytics-bound: few tickets and a long history (SYNC_START_DATE three years back: a dozen export
 *    windows per pass, most of them empty, each still a request, at 10 a window);
 *  - detail-bound: many tickets (one thread request each, at 120 a window) and the default history.
 * The companion enforces the spec's limits per `--window-ms` instead of per minute, and the workers' task
 * queues are paced to match (SUPPORT_API_RATE_WINDOW): the forecast's wall time is at these limits. For
 * each world: the forecast (made as `plan` makes it, on the empty warehouse), then the full sync with
 * in-process workers after one quiet rate window, timed from its start to its result; per class the
 * forecast and actual requests (the companion's request log), and the wall time's lower bound, forecast
 * and actual. Its measured ratio (actual / lower bound) is the figure forecast/wall-time.ts builds on.
 * The last stdout line is one JSON object with every figure.
 */

import { type RequestLogEntry, startCompanion } from '../companion/index.js';
import { SupportApiClient } from '../connectors/support-api/index.js';
import { makeForecast } from '../forecast/forecast.js';
import { forecastReadsOf } from '../forecast/warehouse-reads.js';
import { QUEUED_ROUTE_CLASSES } from '../schemas/config.js';
import { ALL_STREAMS } from '../schemas/streams.js';
import { destinationFromConfig } from '../worker/compose.js';
import {
  benchFlags,
  log,
  requestsByClass,
  startInProcessWorkers,
  startServices,
  syncTarget,
  timedSync,
} from './support/harness.js';

const values = benchFlags(
  'npm run bench:plan -- [--window-ms 10000] [--analytics-tickets 40] [--detail-tickets 1000] [--seed 7]',
  {
    'window-ms': { type: 'string', default: '10000' },
    'analytics-tickets': { type: 'string', default: '40' },
    'detail-tickets': { type: 'string', default: '1000' },
  },
);
const windowMs = Number(values['window-ms']);
const DAY_MS = 24 * 60 * 60 * 1000;

const WORLDS = [
  {
    name: 'analytics-bound',
    tickets: Number(values['analytics-tickets']),
    env: { SYNC_START_DATE: new Date(Date.now() - 3 * 365 * DAY_MS).toISOString() } as Record<string, string>,
  },
  { name: 'detail-bound', tickets: Number(values['detail-tickets']), env: {} as Record<string, string> },
];

const services = await startServices();

/** The export pass of a request in the companion's log (its endpoint, and for CSAT its date pair). */
function passOf(entry: RequestLogEntry): string | null {
  if (entry.path.endsWith('/agent-sessions')) return 'agent_sessions';
  if (!entry.path.endsWith('/csat-surveys')) return null;
  return entry.query['sent_from'] !== undefined ? 'csat_surveys.sent' : 'csat_surveys.submitted';
}
const pct = (forecast: number, actual: number) =>
  actual === 0 ? (forecast === 0 ? 0 : Number.POSITIVE_INFINITY) : ((forecast - actual) / actual) * 100;

async function world(spec: (typeof WORLDS)[number]) {
  const companion = await startCompanion({
    seed: Number(values.seed),
    tickets: spec.tickets,
    rateLimits: true,
    rateLimitWindowMs: windowMs,
  });
  const label = spec.name.replace('-', '_');
  const target = await syncTarget(services, companion, {
    database: `bench_plan_${label}`,
    taskQueue: `bench-plan-${label}`,
    env: { SUPPORT_API_RATE_WINDOW: `PT${windowMs / 1000}S`, LOG_LEVEL: 'warn', ...spec.env },
  });
  const workers = await startInProcessWorkers(services, target);
  const destination = await destinationFromConfig(target.config);
  const client = new SupportApiClient({ baseUrl: companion.baseUrl, apiKey: target.config.SUPPORT_API_KEY });
  try {
    log(`${spec.name}: ${spec.tickets} tickets; forecasting`);
    const started = performance.now();
    const forecast = await makeForecast({
      config: target.config,
      client,
      reads: await forecastReadsOf(destination),
      mode: 'incremental',
      streams: [...ALL_STREAMS],
      now: new Date(),
    });
    const planMs = performance.now() - started;
    log(
      `${spec.name}: forecast ${(forecast.wall.expected_ms / 1000).toFixed(1)} s, binding ${forecast.binding}`,
    );
    // The plan spent list and analytics budget: the run starts in a fresh rate window.
    await new Promise((r) => setTimeout(r, windowMs));
    companion.clearRequestLog();
    const run = await timedSync(services, target, `${spec.name} full sync`);
    const actual = requestsByClass(companion.requestLog);
    const limited = requestsByClass(companion.requestLog.filter((e) => e.status === 429));
    log(`${spec.name}: full sync ${(run.ms / 1000).toFixed(1)} s`);
    // The harness starts the workflow directly: the forecast's preflight request (`sync --once`) is not made.
    const preflight = forecast.items.find((i) => i.source === 'preflight');
    const forecastOf = (c: (typeof QUEUED_ROUTE_CLASSES)[number]) =>
      forecast.classes[c].requests - (preflight?.route_class === c ? preflight.requests : 0);
    return {
      world: spec.name,
      tickets: spec.tickets,
      planMs: Math.round(planMs),
      planCost: forecast.cost,
      binding: forecast.binding,
      classes: Object.fromEntries(
        QUEUED_ROUTE_CLASSES.map((c) => [
          c,
          {
            forecast: forecastOf(c),
            actual: actual[c],
            errorPct: Number(pct(forecastOf(c), actual[c]).toFixed(2)),
            rateLimited: limited[c],
          },
        ]),
      ),
      wall: {
        lowerBoundMs: Math.round(forecast.wall.lower_bound_ms),
        forecastMs: Math.round(forecast.wall.expected_ms),
        actualMs: Math.round(run.ms),
        errorPct: Number(pct(forecast.wall.expected_ms, run.ms).toFixed(2)),
        measuredRatio: Number((run.ms / forecast.wall.lower_bound_ms).toFixed(3)),
        forecastRatio: Number(forecast.wall.ratio.toFixed(3)),
      },
      passes: forecast.passes.map((p) => ({
        pass: p.pass,
        windows: p.windows.length,
        items: p.windows.reduce((n, w) => n + w.items, 0),
        forecast: p.windows.reduce((n, w) => n + w.pages, 0),
        actual: companion.requestLog.filter((e) => passOf(e) === p.pass).length,
        probe: p.probe,
      })),
    };
  } finally {
    await client.close();
    await destination.close();
    await workers.stop();
    await companion.stop();
  }
}

const results = [];
try {
  for (const spec of WORLDS) results.push(await world(spec));
} finally {
  await services.stop();
}
console.log(`bench:plan — the spec's limits per ${windowMs} ms, seed ${values.seed}`);
for (const r of results) {
  console.log(
    `\n${r.world} (${r.tickets} tickets): binding ${r.binding}; the plan took ${(r.planMs / 1000).toFixed(1)} s and cost ${JSON.stringify(r.planCost)}`,
  );
  console.table(
    Object.entries(r.classes).map(([c, v]) => ({
      class: c,
      forecast: v.forecast,
      actual: v.actual,
      'error %': v.errorPct,
      '429s': v.rateLimited,
    })),
  );
  console.log(
    `export pages (estimated): ${r.passes.map((p) => `${p.pass} ${p.forecast} (actual ${p.actual}, ~${p.items} items in ${p.windows} windows)`).join('; ')}`,
  );
  console.log(
    `wall time: lower bound ${(r.wall.lowerBoundMs / 1000).toFixed(1)} s, forecast ${(r.wall.forecastMs / 1000).toFixed(1)} s (× ${r.wall.forecastRatio}), actual ${(r.wall.actualMs / 1000).toFixed(1)} s (× ${r.wall.measuredRatio}); error ${r.wall.errorPct} %`,
  );
}
console.log(JSON.stringify({ windowMs, worlds: results }));
