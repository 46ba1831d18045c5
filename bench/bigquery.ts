/**
 * Benchmark of the BigQuery write path against BigQuery's per-table quotas, conflict rules and bill
 * (issue 21): what the destination submits, counted per table, next to the PostgreSQL run of the same world.
 *
 *   npm run bench:bigquery -- [--tickets 20000] [--seed 7] [--min-job-ms 1000] [--queries <file>]
 *
 * Set-up: a companion world (rate limits off: the warehouse is the bottleneck), an embedded PostgreSQL, a
 * Temporal dev server, in-process workers, and the BigQuery emulator behind the quota proxy
 * (test/support/bigquery-quota-proxy.ts) in recording mode: nothing is refused, every job and table operation is
 * counted. The proxy answers a job's insert no sooner than `--min-job-ms` after it arrived (the emulator
 * answers at once; BigQuery takes a second or more for the smallest query, longer for a script), so jobs
 * the client runs at once overlap as they would on the service: the concurrency peaks are lower bounds.
 *
 * Runs, each on both warehouses (PostgreSQL first, then BigQuery): a full sync (an empty warehouse, the
 * whole history, default settings), then a no-change incremental run (default settings: the thread
 * look-back and the rolling re-read run as they do every hour). A run that fails is reported with its
 * figures up to the failure (the runs after it are skipped) and the bench exits 1.
 *
 * Figures per BigQuery run and table (a row `_stage_<table>*` stands for the per-batch staging tables of
 * <table>): jobs that write it, jobs that only read it, table reads (tabledata.list pages: no job, billed nothing), DML statements (and those inside IF … END IF, which
 * run only when their condition holds), peak DML per 10 s (limit 25), peak concurrent mutating DML (2),
 * peak concurrent transactions writing it (BigQuery aborts all but one), load jobs, and × 24 those into
 * the one table of the row that got most (a day at the hourly schedule: the limit is 1,500 per table),
 * table metadata operations and their peak per 10 s (5), and bytes billed as BigQuery would bill them: each statement of a script is a child job
 * billing at least 10 MB, and at least 10 MB per table it names, else the logical size of the tables it
 * reads plus, for UPDATE / DELETE / MERGE that updates, its whole target (test/support/bigquery-billing.ts; the
 * sizes are sampled from the emulator by bench/support/bigquery-sizes.ts, since its `numBytes` is 0).
 * Then totals, violations per rule, the requests per route, and each run's wall time and rows on both
 * warehouses. The last stdout line is one JSON object with every figure.
 */
import { createWriteStream } from 'node:fs';
import { BigQuery } from '@google-cloud/bigquery';
import pg from 'pg';
import { startCompanion } from '../companion/index.js';
import { emulatorClientOptions } from '../connectors/bigquery/destination.js';
import { DestinationSettings } from '../connectors/settings.js';
import { tableLayouts } from '../connectors/table-layouts.js';
import { startBigQueryEmulator } from '../scripts/bigquery-emulator.js';
import { MINIMUM_BILLED_BYTES } from '../test/support/bigquery-billing.js';
import { BIGQUERY_LIMITS, type QuotaReport } from '../test/support/bigquery-quota-ledger.js';
import { startBigQueryQuotaProxy } from '../test/support/bigquery-quota-proxy.js';
import { startTableSizeSampler } from './support/bigquery-sizes.js';
import {
  benchFlags,
  log,
  type Services,
  type SyncTarget,
  startInProcessWorkers,
  startServices,
  syncTarget,
  timedSync,
} from './support/harness.js';

const values = benchFlags(
  'npm run bench:bigquery -- [--tickets 20000] [--seed 7] [--min-job-ms 1000] [--queries <file>]',
  {
    tickets: { type: 'string', default: '20000' },
    'min-job-ms': { type: 'string', default: '1000' },
    // Every query job's SQL, one JSON line each with the run it belongs to: where a run's bill goes.
    queries: { type: 'string' },
  },
);
const tickets = Number(values.tickets);
const minJobMs = Number(values['min-job-ms']);
if (!Number.isInteger(tickets) || tickets < 1)
  throw new Error(`--tickets must be a positive integer, got ${values.tickets}`);
if (!Number.isInteger(minJobMs) || minJobMs < 0)
  throw new Error(`--min-job-ms must be a whole number of milliseconds, got ${values['min-job-ms']}`);

const PHASES = ['full sync', 'no-change run'] as const;
type Phase = (typeof PHASES)[number];
const TABLES = tableLayouts(new DestinationSettings({})).map((t) => t.name);
const MiB = 1024 * 1024;

/** Both runs on one target, with `before` / `after` around each (the proxy's phases, the row counts). */
async function runPhases<R>(
  services: Services,
  target: SyncTarget,
  label: string,
  around: { before(): void; after(): Promise<R> },
): Promise<Partial<Record<Phase, PhaseResult<R>>>> {
  const workers = await startInProcessWorkers(services, target);
  const out: Partial<Record<Phase, PhaseResult<R>>> = {};
  try {
    for (const phase of PHASES) {
      around.before();
      const started = performance.now();
      // A run that fails still has figures (what it submitted until then is what BigQuery would have
      // seen): they are printed with the failure, and the phases after it are not run.
      let failed: string | undefined;
      let written = 0;
      try {
        written = (await timedSync(services, target, `${label} ${phase}`)).summary.totals.rows;
      } catch (err) {
        failed = (err as Error).message;
      }
      const ms = performance.now() - started;
      const extra = await around.after();
      log(
        `${label} ${phase}: ${(ms / 1000).toFixed(1)} s, ${failed ? `FAILED: ${failed}` : `${written} rows written`}`,
      );
      out[phase] = failed === undefined ? { ms, extra } : { ms, extra, failed };
      if (failed !== undefined) break;
    }
  } finally {
    await workers.stop();
  }
  return out;
}

/** One run of a phase on one warehouse: its wall time, what was measured after it, and its failure if any. */
interface PhaseResult<R> {
  readonly ms: number;
  readonly extra: R;
  readonly failed?: string;
}

async function postgresRows(url: string): Promise<Record<string, number>> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const out: Record<string, number> = {};
    for (const t of TABLES)
      out[t] = Number((await db.query(`SELECT count(*) AS n FROM support."${t}"`)).rows[0].n);
    return out;
  } finally {
    await db.end();
  }
}

const mib = (bytes: number) => Number((bytes / MiB).toFixed(1));

/** One printed row per table group of a BigQuery run, with the PostgreSQL rows of the same table. */
function tableRows(report: QuotaReport, bqRows: Record<string, number>, pgRows: Record<string, number>) {
  const groups = [...new Set([...TABLES.filter((t) => report.tables[t]), ...Object.keys(report.tables)])];
  return groups.map((table) => {
    const f = report.tables[table]!;
    return {
      table,
      jobs: f.jobs,
      'read jobs': f.readJobs,
      'table reads': f.tableReads,
      DML: f.dmlStatements,
      'DML in IF': f.conditionalDml,
      'peak DML/10s': f.peakDmlPer10s,
      'peak mut. DML': f.peakConcurrentMutatingDml,
      'peak tx': f.peakConcurrentTransactions,
      loads: f.loadJobs,
      'loads/day/table': f.peakLoadJobsPerTable * 24,
      'table ops': f.tableOps,
      'peak ops/10s': f.peakTableOpsPer10s,
      'billed MiB': mib(f.billedBytes),
      'rows BQ': bqRows[table] ?? '',
      'rows PG': pgRows[table] ?? '',
    };
  });
}

function totalsOf(report: QuotaReport) {
  const tables = Object.values(report.tables);
  const sum = (k: keyof (typeof tables)[number]) => tables.reduce((a, f) => a + f[k], 0);
  const max = (k: keyof (typeof tables)[number]) => tables.reduce((a, f) => Math.max(a, f[k]), 0);
  const violations: Record<string, number> = {};
  for (const v of report.violations) violations[v.rule] = (violations[v.rule] ?? 0) + 1;
  // Warehouse tables the run read or wrote (staging tables and views apart), by a job or a table read
  // (a run that reads a table to know it has nothing to write still touches it): the bound a no-change
  // run's bill should keep is 10 MB for each.
  const touched = TABLES.filter((t) => {
    const f = report.tables[t];
    return (f?.jobs ?? 0) + (f?.readJobs ?? 0) + (f?.tableReads ?? 0) > 0;
  }).length;
  return {
    queryJobs: report.queryJobs,
    loadJobs: report.loadJobs,
    dmlStatements: sum('dmlStatements'),
    conditionalDml: sum('conditionalDml'),
    tableOps: sum('tableOps'),
    streamingInserts: sum('streamingInserts'),
    tableReads: sum('tableReads'),
    peakDmlPer10s: max('peakDmlPer10s'),
    peakConcurrentMutatingDml: max('peakConcurrentMutatingDml'),
    peakConcurrentTransactions: max('peakConcurrentTransactions'),
    peakTableOpsPer10s: max('peakTableOpsPer10s'),
    maxLoadJobsPerTablePerDay: max('peakLoadJobsPerTable') * 24,
    loadJobsPerDay: report.loadJobs * 24,
    billedStatements: report.billedStatements,
    billedBytesEstimate: report.billedBytesEstimate,
    billedBytesFloorPerJob: report.billedBytesFloor,
    tablesTouched: touched,
    touchedTablesFloor: touched * MINIMUM_BILLED_BYTES,
    /** Issue 21's bound for a no-change run: the estimate within 10 MB × the tables touched. */
    withinTouchedTablesFloor: report.billedBytesEstimate <= touched * MINIMUM_BILLED_BYTES,
    violations,
  };
}

log(`generating a ${tickets}-ticket world`);
const companion = await startCompanion({ seed: Number(values.seed), tickets, rateLimits: false });
const services = await startServices();
log('starting the BigQuery emulator');
const emulator = await startBigQueryEmulator({ log });
const dataset = 'bench_bigquery';
const direct = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.endpoint) });
const sizes = startTableSizeSampler(direct, dataset);
let phaseNow = 'set-up';
let phasesStarted = 0;
const queryLog = values.queries ? createWriteStream(values.queries) : null;
const proxy = await startBigQueryQuotaProxy(emulator.endpoint, {
  enforce: false,
  minJobMs,
  tableBytes: sizes.sizeOf,
  onQuery: (sql) => {
    queryLog?.write(`${JSON.stringify({ at: new Date().toISOString(), phase: phaseNow, sql })}\n`);
  },
});
const env = { SUPPORT_API_RATE_LIMITS: 'off', LOG_LEVEL: 'silent' };

try {
  const pgTarget = await syncTarget(services, companion, {
    database: 'bench_bigquery_pg',
    taskQueue: 'bench-bigquery-pg',
    env,
  });
  const postgres = await runPhases(services, pgTarget, 'PostgreSQL', {
    before() {},
    after: () => postgresRows(pgTarget.databaseUrl),
  });

  const bqTarget = await syncTarget(services, companion, {
    destinationUrl: `bigquery://${emulator.projectId}/${dataset}`,
    taskQueue: 'bench-bigquery-bq',
    env: { ...env, BIGQUERY_API_ENDPOINT: proxy.endpoint, BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint },
  });
  const bigquery = await runPhases(services, bqTarget, 'BigQuery', {
    before: () => {
      proxy.reset();
      phaseNow = PHASES[phasesStarted++] ?? 'after';
    },
    async after() {
      const report = proxy.report();
      const sampled = await sizes.sample();
      const rows = Object.fromEntries(Object.entries(sampled).map(([t, s]) => [t, s.rows]));
      const bytes = Object.fromEntries(Object.entries(sampled).map(([t, s]) => [t, s.bytes]));
      return { report, rows, bytes };
    },
  });

  console.log(
    `bench:bigquery — ${tickets} tickets, seed ${values.seed}; source rate limits off; BigQuery: bqemulator ` +
      `behind the quota proxy (recording), jobs answered after ≥ ${minJobMs} ms`,
  );
  const json: Record<string, unknown> = {
    tickets,
    seed: Number(values.seed),
    minJobMs,
    limits: BIGQUERY_LIMITS,
  };
  const failures: string[] = [];
  for (const phase of PHASES) {
    const bq = bigquery[phase];
    const pgRun = postgres[phase];
    if (bq === undefined || pgRun === undefined) {
      console.log(`\n${phase}: not run (a run before it failed)`);
      continue;
    }
    const { report, rows, bytes } = bq.extra;
    const pgRows = pgRun.extra;
    const totals = totalsOf(report);
    for (const [warehouse, run] of [
      ['BigQuery', bq],
      ['PostgreSQL', pgRun],
    ] as const)
      if (run.failed !== undefined) failures.push(`${warehouse} ${phase}: ${run.failed}`);
    console.log(
      `\nBigQuery, ${phase}: ${(bq.ms / 1000).toFixed(1)} s${bq.failed ? ' (FAILED)' : ''}; PostgreSQL, same run: ${(pgRun.ms / 1000).toFixed(1)} s${pgRun.failed ? ' (FAILED)' : ''}`,
    );
    console.table(tableRows(report, rows, pgRows));
    console.log(
      `totals: ${totals.queryJobs} query jobs, ${totals.loadJobs} load jobs, ${totals.dmlStatements} DML statements ` +
        `(+ ${totals.conditionalDml} inside IF), ${totals.tableOps} table operations, ${totals.streamingInserts} streaming inserts, ` +
        `${totals.tableReads} table reads (tabledata.list pages: no job, nothing billed); ` +
        `peaks per table: ${totals.peakDmlPer10s} DML/10 s (limit ${BIGQUERY_LIMITS.dmlPerTablePer10s}), ` +
        `${totals.peakConcurrentMutatingDml} concurrent mutating DML (limit ${BIGQUERY_LIMITS.concurrentMutatingDmlPerTable}), ` +
        `${totals.peakConcurrentTransactions} concurrent transactions (1 commits), ${totals.peakTableOpsPer10s} table ops/10 s ` +
        `(limit ${BIGQUERY_LIMITS.tableMetadataUpdatesPerTablePer10s}); load jobs × 24: ${totals.loadJobsPerDay} a day, at most ` +
        `${totals.maxLoadJobsPerTablePerDay} into one table (limit ${BIGQUERY_LIMITS.loadJobsPerTablePerDay}: each batch loads a ` +
        `staging table of its own, created and dropped around it — ${totals.tableOps} table operations)`,
    );
    console.log(
      `billed (estimate): ${mib(totals.billedBytesEstimate)} MiB over ${totals.billedStatements} statements ` +
        `(child jobs); the floor alone, one 10 MB bill per query job: ${mib(totals.billedBytesFloorPerJob)} MiB; ` +
        `10 MB × the ${totals.tablesTouched} tables read or written: ${mib(totals.touchedTablesFloor)} MiB; ` +
        `warehouse size after the run: ${mib(Object.values(bytes).reduce((a, b) => a + b, 0))} MiB`,
    );
    if (phase === 'no-change run') {
      // Issue 21's bound: a run that changes nothing bills at most the 10 MB minimum once per table it
      // touches; and its jobs grow with tables × windows, not with threads.
      const met = totals.billedBytesEstimate <= totals.touchedTablesFloor;
      console.log(
        `no-change bound: billed ${mib(totals.billedBytesEstimate)} MiB against 10 MB × ${totals.tablesTouched} tables = ` +
          `${mib(totals.touchedTablesFloor)} MiB: ${met ? 'met' : `NOT met (${(totals.billedBytesEstimate / totals.touchedTablesFloor).toFixed(1)} × the bound)`}; ` +
          `${totals.queryJobs} query jobs, ${totals.tableReads} table reads`,
      );
    }
    const rules = Object.entries(totals.violations);
    console.log(
      `violations (a real project would see them fail or abort): ${rules.length === 0 ? 'none' : rules.map(([r, n]) => `${r} ${n}`).join(', ')}`,
    );
    const routes = Object.entries(report.requests).sort((a, b) => b[1] - a[1]);
    console.log(`requests: ${routes.map(([r, n]) => `${r} ${n}`).join(', ')}`);
    json[phase === 'full sync' ? 'fullSync' : 'noChange'] = {
      bigquery: {
        ms: Math.round(bq.ms),
        ...(bq.failed ? { failed: bq.failed } : {}),
        ...totals,
        tables: report.tables,
        rows,
        bytes,
        requests: report.requests,
      },
      postgres: { ms: Math.round(pgRun.ms), ...(pgRun.failed ? { failed: pgRun.failed } : {}), rows: pgRows },
    };
  }
  if (failures.length > 0) {
    console.log(`failed runs (their figures above are up to the failure): ${failures.join('; ')}`);
    json['failed'] = failures;
    process.exitCode = 1;
  }
  console.log(JSON.stringify(json));
} finally {
  queryLog?.end();
  await sizes.stop();
  await proxy.stop();
  await emulator.stop();
  await services.stop();
  await companion.stop();
}
