/**
 * Report engine latency over a 100k-ticket world (issue 6): p50/p99 for a KPI, a 90-day daily time series
 * and a grouped data table, measured in-process on the engine (no HTTP), after one warm-up query that builds
 * the per-version observation index. Also prints the one-off index build time and, as the baseline measured in
 * the same run, the cost of one plain pass over all tickets, so the figures read as ratios on any machine.
 *
 *   npm run bench:reports            (TICKETS=100000 RUNS=50 by default)
 */
import { runReport } from '../companion/reports/engine.js';
import { type AgentRecord, generateWorld, World } from '../companion/world/index.js';

const TICKETS = Number(process.env.TICKETS ?? 100_000);
const RUNS = Number(process.env.RUNS ?? 50);
const NOW = Date.parse('2025-04-15T10:00:00Z');

const t0 = performance.now();
const world = new World(generateWorld(7, TICKETS, NOW), {
  now: () => NOW,
  realNow: Date.now,
  replicaLagMs: 0,
  messageBumpsTicketUpdatedAt: true,
});
const genMs = performance.now() - t0;
const agent = world.agent(world.key('admin').agentId as string) as AgentRecord;
const ctx = () => ({ world, orgId: world.orgA.id, agent, now: NOW, realNow: Date.now() });

const QUERIES: Record<string, string[]> = {
  kpi: [
    'FROM tickets',
    'SHOW customer_first_response_time',
    'DURING last_month',
    'VISUALIZE customer_first_response_time TYPE kpi',
  ],
  'series 90d daily': [
    'FROM tickets',
    'SHOW new_tickets, resolved_tickets',
    'SINCE 2025-01-15 UNTIL 2025-04-14',
    'TIMESERIES day',
    'COMPARE TO previous_period',
    'VISUALIZE new_tickets, resolved_tickets TYPE line',
  ],
  'table by team': [
    'FROM tickets',
    'SHOW new_tickets, full_resolution_time, csat_average, backlog_now',
    'DURING last_month',
    'GROUP BY team',
    'VISUALIZE new_tickets, full_resolution_time, csat_average, backlog_now TYPE data_table',
  ],
};

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number;
};

// Baseline: one pass over every ticket reading two fields.
const base: number[] = [];
for (let i = 0; i < RUNS; i++) {
  const s = performance.now();
  let n = 0;
  for (const t of world.tickets) if (t.createdAt > NOW - 86_400_000 * 30 && t.status !== 'closed') n++;
  base.push(performance.now() - s);
  if (n < 0) console.log(n);
}
const baseP50 = pct(base, 50);

const w0 = performance.now();
for (const q of Object.values(QUERIES)) runReport({ query: q.join('\n'), timezone: 'Europe/Berlin' }, ctx());
const warmMs = performance.now() - w0;

console.log(
  `world: ${world.tickets.length} tickets, ${world.messages.length} messages, ${world.events.length} events (generated in ${genMs.toFixed(0)} ms)`,
);
console.log(`first queries (index build included): ${warmMs.toFixed(0)} ms`);
console.log(`baseline (one pass over all tickets): p50 ${baseP50.toFixed(2)} ms`);
console.log(
  `${'query'.padEnd(18)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'p50/baseline'.padStart(13)}`,
);
for (const [name, q] of Object.entries(QUERIES)) {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const s = performance.now();
    runReport({ query: q.join('\n'), timezone: 'Europe/Berlin' }, ctx());
    times.push(performance.now() - s);
  }
  const p50 = pct(times, 50);
  console.log(
    `${name.padEnd(18)} ${p50.toFixed(2).padStart(8)} ${pct(times, 99).toFixed(2).padStart(8)} ${(p50 / baseP50).toFixed(1).padStart(12)}x`,
  );
}
