/**
 * Benchmark of issue 44, "Many workspaces, one fleet": N small workspaces (20–200 tickets each, drawn from
 * the seed) and one big one of `--big` tickets doing a backfill, on one Temporal dev server, one PostgreSQL
 * and two worker processes (`cli/main.ts worker` with SYNC_WORKSPACES_FILE), at each scale of `--scales`,
 * each a fresh world: its own companion, dev server, database and task queue, so the scales' figures
 * stand side by side. The companion's rate limits are off: what is measured is what the pipeline costs per
 * workspace, not the waits of an API's limits. Every run must succeed, and a sample of workspaces must hold
 * exactly what their worlds serve (bench/support/workspace-scale.ts says what each figure is).
 *
 *   npm run bench:workspaces -- [--scales 10,100,1000] [--big 20000] [--alone 5] [--changes 3] [--gap 1.5] [--seed 7]
 */
import pg from 'pg';
import { startEmbeddedPostgres } from '../embedded/postgres.js';
import { benchFlags, log } from './support/harness.js';
import { measureScale, type ScaleResult } from './support/workspace-scale.js';

/** Seconds between two run starts of a round (the schedules' phases spread them): see measureScale. */
const GAP_DEFAULT = '1.5';

const values = benchFlags(
  'npm run bench:workspaces -- [--scales 10,100,1000] [--big 20000] [--alone 5] [--changes 3] [--gap 1.5] [--seed 7]',
  {
    scales: { type: 'string', default: '10,100,1000' },
    big: { type: 'string', default: '20000' },
    alone: { type: 'string', default: '5' },
    changes: { type: 'string', default: '3' },
    gap: { type: 'string', default: GAP_DEFAULT },
  },
);
const scales = values.scales.split(',').map(Number);
if (scales.some((n) => !Number.isInteger(n) || n < 1))
  throw new Error('--scales: positive integers, comma-separated');
const gapMs = Number(values.gap) * 1000;
if (!Number.isFinite(gapMs) || gapMs < 0) throw new Error('--gap: seconds between run starts, 0 or more');

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mb = (b: number) => `${Math.round(b / 2 ** 20)} MB`;
const r1 = (x: number) => x.toFixed(1);

/** One line per figure of a scale, as soon as it is measured. */
function printScale(r: ScaleResult): void {
  const h = r.history;
  const d = r.delay;
  const lines = [
    `scale ${r.count}: ${r.count} small workspaces (${r.smallTickets} tickets) + big (${r.bigTickets} tickets, backfill)`,
    `  first round wall: small runs ${s(r.firstSmallMs)}, with the backfill ${s(r.firstAllMs)} (backfill ${s(r.backfillMs)}); starts ${r.gapMs > 0 ? `one every ${s(r.gapMs)}` : 'at once'}, ${r.openRuns.first} runs open at most`,
    `  hourly round wall: ${s(r.hourlyMs)} (${r.count + 1} incremental runs, ${r.openRuns.hourly} open at most; a small run's wall median ${s(r.hourlyRunMs.median)}, slowest ${s(r.hourlyRunMs.max)})`,
    `  CPU (every process of the world): small first sync alone ${r1(r.cpu.aloneSmall)} s, big backfill alone ${r1(r.cpu.aloneBig)} s; first round ${r1(r.cpu.first['total'] ?? 0)} s ${JSON.stringify(roundAll(r.cpu.first))}, hourly round ${r1(r.cpu.hourly['total'] ?? 0)} s ${JSON.stringify(roundAll(r.cpu.hourly))}`,
    `  CPU per workspace: first sync ${cpuPerSmallFirst(r).toFixed(2)} s (the round less the backfill alone, / ${r.count}), hourly ${cpuPerHourly(r).toFixed(2)} s (/ ${r.count + 1})`,
    `  pages/s: first round ${r1(r.firstPages / (r.firstAllMs / 1000))} (${r.firstPages} pages), hourly ${r1(r.hourlyPages / (r.hourlyMs / 1000))} (${r.hourlyPages} pages)`,
    `  requests per small workspace, first sync: ${r1(r.firstRequests.mean)} vs lower bound ${r1(r.firstRequests.bound)} (×${(r.firstRequests.mean / r.firstRequests.bound).toFixed(2)}, worst workspace ×${r.firstRequests.worstRatio.toFixed(2)}); by category ${JSON.stringify(roundAll(r.firstRequests.byCategory))}`,
    `  requests of the big backfill: ${r.bigRequests.requests} vs lower bound ${r.bigRequests.bound} (×${(r.bigRequests.requests / r.bigRequests.bound).toFixed(2)})`,
    `  requests per small workspace, hourly: ${r1(r.hourlyRequests.mean)} ${JSON.stringify(roundAll(r.hourlyRequests.byCategory))}; big ${r.hourlyRequests.big}`,
    `  per-workspace cost: first round ${(r.firstSmallMs / 1000 / r.count).toFixed(3)} s, hourly ${(r.hourlyMs / 1000 / (r.count + 1)).toFixed(3)} s`,
    `  worker peak RSS (VmHWM): ${r.workerPeakRss.map(mb).join(', ')}`,
    `  history events per run (all ${h.executionsListed} executions, by root): small first sync median ${h.smallFirst.median} (max ${h.smallFirst.max}, ${h.smallFirst.executions} executions), small hourly median ${h.smallHourly.median} (max ${h.smallHourly.max}, ${h.smallHourly.executions} executions), backfill ${h.backfill.events} (${h.backfill.executions} executions)`,
    `  open children per parent, max (histories of ${h.sampledChildren} executions sampled): small runs ${h.maxOpenChildrenSmall}, backfill ${h.maxOpenChildrenBig}`,
    `  small first syncs beside the backfill: median ${s(d.medianSmallMs)}, slowest ${s(d.slowestSmallMs)} (${d.slowestSmallTickets} tickets); alone median ${s(d.aloneMedianMs)}; sampled twins' delay median ${s(d.sampledMedianDelayMs)}, max ${s(d.sampledMaxDelayMs)}`,
    `  small first syncs that ended while the backfill ran: ${d.beside.runs}, median ${s(d.beside.medianMs)}, slowest ${s(d.beside.slowestMs)}; started after it ended: ${d.after.runs}, median ${s(d.after.medianMs)}, slowest ${s(d.after.slowestMs)}`,
    `  warehouse size: ${mb(r.warehouseBytes)} (empty database ${mb(r.emptyDatabaseBytes)}; ${((r.warehouseBytes - r.emptyDatabaseBytes) / (r.count + 1) / 2 ** 20).toFixed(1)} MB per workspace beyond it)`,
    `  exactness: ${r.checked} workspaces' warehouse row counts equal their worlds'`,
  ];
  console.log(lines.join('\n'));
}

/** A small first sync's CPU in the round: the round's, less what the backfill costs alone, per workspace. */
const cpuPerSmallFirst = (r: ScaleResult) => ((r.cpu.first['total'] ?? 0) - r.cpu.aloneBig) / r.count;
const cpuPerHourly = (r: ScaleResult) => (r.cpu.hourly['total'] ?? 0) / (r.count + 1);

function roundAll(o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Number(v.toFixed(1))]));
}

const postgres = await startEmbeddedPostgres({});
const results: ScaleResult[] = [];
try {
  for (const count of scales) {
    const started = performance.now();
    const r = await measureScale(postgres, {
      count,
      bigTickets: Number(values.big),
      seed: Number(values.seed),
      alone: Math.min(Number(values.alone), count),
      changes: Number(values.changes),
      workers: 2,
      gapMs,
    });
    results.push(r);
    printScale(r);
    log(`scale ${count} measured in ${s(performance.now() - started)}`);
    // The next scale's world starts from nothing: drop this one's database (its size is measured).
    const admin = new pg.Client({ connectionString: postgres.url });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS bench_workspaces_${count} WITH (FORCE)`);
    await admin.end();
  }
} finally {
  await postgres.stop();
}

const first = results[0] as ScaleResult;
console.log(
  `\nbench:workspaces — seed ${values.seed}, big ${values.big} tickets, 2 worker processes, rate limits off, ${values.gap} s between run starts`,
);
console.table(
  results.map((r) => ({
    workspaces: r.count,
    'wall s (first, hourly)': `${r1(r.firstSmallMs / 1000)} (${r1(r.firstAllMs / 1000)} w/ backfill), ${r1(r.hourlyMs / 1000)}`,
    'pages/s': Math.round(r.firstPages / (r.firstAllMs / 1000)),
    'req/ws vs bound': `${r1(r.firstRequests.mean)} / ${r1(r.firstRequests.bound)}`,
    's/ws (first, hourly)': `${(r.firstSmallMs / 1000 / r.count).toFixed(3)}, ${(r.hourlyMs / 1000 / (r.count + 1)).toFixed(3)}`,
    'CPU s/ws (first, hourly)': `${cpuPerSmallFirst(r).toFixed(2)}, ${cpuPerHourly(r).toFixed(2)}`,
    'open runs max': `${r.openRuns.first}, ${r.openRuns.hourly}`,
    'req/ws hourly': r1(r.hourlyRequests.mean),
    'worker RSS': r.workerPeakRss.map(mb).join(', '),
    'events/run (small, big)': `${r.history.smallFirst.median}, ${r.history.backfill.events}`,
    'open children max': `${r.history.maxOpenChildrenSmall}, ${r.history.maxOpenChildrenBig}`,
    'small first sync median: beside backfill, after, alone': `${s(r.delay.beside.medianMs)}, ${s(r.delay.after.medianMs)}, ${s(r.delay.aloneMedianMs)}`,
    'slowest small': s(r.delay.slowestSmallMs),
    warehouse: mb(r.warehouseBytes),
    'vs first scale (CPU/ws hourly)': (cpuPerHourly(r) / cpuPerHourly(first)).toFixed(2),
  })),
);
console.log(JSON.stringify({ bench: 'workspaces', seed: Number(values.seed), results }));
