/**
 * Benchmark: throughput when the API is not the limit. One companion world per size (rate limits off, seed
 * 21 unless told), read three ways one after the other in the same run:
 *  - the plain crawl (bench/support/crawl.ts): the project's client reading every page a sync needs at the
 *    sync's concurrency, writing nothing — the source's own limit;
 *  - dlt's `rest_api` source into DuckDB (bench/support/dlt-rest-api.py; dlt from PyPI in a virtualenv this
 *    bench provisions under ~/.cache/support-sync, as scripts/bigquery-emulator.ts does for the emulator),
 *    skipped with the reason printed when Python or PyPI cannot be had, or with `--skip-dlt`;
 *  - `sync --once` into PostgreSQL (the CLI as a user runs it, its own local worker, against this bench's
 *    Temporal dev server and embedded PostgreSQL); from source (`tsx cli/main.ts`, which bundles the
 *    workflows at start) unless `--built`: the package's `dist/cli/main.js` (`npm run build` first), which
 *    loads the built bundle, as `npx support-sync` does.
 *
 *   npm run bench:throughput -- [--tickets 3000] [--large] [--large-tickets 100000] [--seed 21] [--skip-dlt]
 *
 * `--large` adds a second world of `--large-tickets` tickets (the sync and the crawl only, unless
 * `--dlt-large`). Per reader: wall time (process start to exit for dlt and the sync), pages (requests the
 * companion served it), pages/s, rows/s (rows stored), peak RSS and CPU seconds per 1,000 pages (the
 * process's own user + system time from `/usr/bin/time`; the crawl runs in this process: its CPU is this
 * process's during the crawl). The servers' CPU (Temporal, PostgreSQL, the companion) is not in any figure.
 * `BENCH_THROUGHPUT_LOG=<file>` appends the stderr of dlt and the sync (progress, logs) to a file;
 * `BENCH_SYNC_NODE_OPTIONS` becomes the sync's NODE_OPTIONS (e.g. `--cpu-prof --cpu-prof-dir=<dir>`), and
 * `BENCH_SYNC_LOG_LEVEL` its LOG_LEVEL (default `warn`; `info` gives the timeline of its start and end).
 */
import { execFile, spawn } from 'node:child_process';
import { appendFileSync, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { type CompanionHandle, startCompanion } from '../companion/index.js';
import { planWindows } from '../connectors/support-api/index.js';
import { childEnvironment } from '../embedded/child-env.js';
import { MAX_EXPORT_WINDOW_MS } from '../schemas/api/exports.js';
import { STREAM_TABLE_NAMES } from '../schemas/warehouse.js';
import { settingsFromConfig } from '../worker/config.js';
import { plainCrawl } from './support/crawl.js';
import { benchFlags, log, type Services, startServices, sum, syncTarget } from './support/harness.js';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DAY_MS = 24 * 60 * 60 * 1000;
const DLT_VERSION = '1.31.0';

const values = benchFlags(
  'npm run bench:throughput -- [--tickets 3000] [--large] [--large-tickets 100000] [--dlt-large] [--seed 21] [--skip-dlt] [--built]',
  {
    tickets: { type: 'string', default: '3000' },
    large: { type: 'boolean', default: false },
    'large-tickets': { type: 'string', default: '100000' },
    'dlt-large': { type: 'boolean', default: false },
    'skip-dlt': { type: 'boolean', default: false },
    built: { type: 'boolean', default: false },
  },
);
// The world: seed 21 unless the flag says otherwise (the harness defaults every bench to 7).
const seed = process.argv.includes('--seed') ? Number(values.seed) : 21;

/** What one reader of one world measured. */
interface Reading {
  reader: string;
  wallMs: number;
  pages: number;
  rows: number;
  peakRssBytes: number | null;
  cpuSeconds: number | null;
  note?: string;
}

/** The resource use `/usr/bin/time -f '%e %U %S %M'` wrote: wall s, user s, system s, max RSS kB. */
async function timeFile(path: string): Promise<{ cpuSeconds: number; peakRssBytes: number } | null> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const m = /([\d.]+) ([\d.]+) ([\d.]+) (\d+)\s*$/.exec(text.trim());
  if (!m) return null;
  return { cpuSeconds: Number(m[2]) + Number(m[3]), peakRssBytes: Number(m[4]) * 1024 };
}

/** Runs a program under `/usr/bin/time` (its resource use) when there is one; stdout and the resource use. */
async function measured(
  program: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  label: string,
): Promise<{ wallMs: number; stdout: string; usage: Awaited<ReturnType<typeof timeFile>> }> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-throughput-'));
  const usageFile = join(dir, 'time');
  const timed = existsSync('/usr/bin/time');
  const [cmd, argv] = timed
    ? ['/usr/bin/time', ['-o', usageFile, '-f', '%e %U %S %M', program, ...args]]
    : [program, args];
  const started = performance.now();
  const child = spawn(cmd, argv as string[], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  // BENCH_THROUGHPUT_LOG=<file>: each reader's whole stderr (the sync's progress and logs) appended there,
  // each chunk stamped with the seconds since the process started, and its exit: where its wall went.
  const logFile = process.env['BENCH_THROUGHPUT_LOG'];
  const stamp = () => `[+${((performance.now() - started) / 1000).toFixed(2)} s] `;
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-20_000);
    if (logFile) appendFileSync(logFile, `${stamp()}${d.toString()}`);
  });
  child.stdout.once('end', () => {
    if (logFile) appendFileSync(logFile, `${stamp()}${label}: stdout closed\n`);
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const wallMs = performance.now() - started;
  if (logFile) appendFileSync(logFile, `${stamp()}${label}: exited with ${code}\n`);
  const usage = timed ? await timeFile(usageFile) : null;
  await rm(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`${label} exited with ${code}:\n${stderr.slice(-4000)}`);
  return { wallMs, stdout, usage };
}

// ---------------------------------------------------------------------------------------------------------
// dlt: a virtualenv of its own, from PyPI

/** The virtualenv's python with dlt importable, provisioned on first use; or why there is none. */
async function provisionDlt(): Promise<{ python: string } | { skipped: string }> {
  const dir = join(homedir(), '.cache', 'support-sync', `dlt-${DLT_VERSION}`);
  const python = join(dir, 'venv', 'bin', 'python');
  const importable = () =>
    execFileAsync(python, ['-c', 'import dlt, duckdb'], { env: childEnvironment() }).then(
      () => true,
      () => false,
    );
  if (existsSync(python) && (await importable())) return { python };
  try {
    await mkdir(dir, { recursive: true });
    log(`dlt ${DLT_VERSION}: creating a virtualenv in ${dir} and installing dlt[duckdb] from PyPI…`);
    await execFileAsync('python3', ['-m', 'venv', join(dir, 'venv')], { env: childEnvironment() });
    await execFileAsync(
      python,
      ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `dlt[duckdb]==${DLT_VERSION}`],
      { maxBuffer: 64 * 1024 * 1024, env: childEnvironment() },
    );
  } catch (err) {
    return { skipped: `dlt could not be installed: ${(err as Error).message.split('\n')[0]}` };
  }
  return (await importable()) ? { python } : { skipped: 'dlt installed but does not import' };
}

async function dltReading(
  companion: CompanionHandle,
  python: string,
  windows: { from: string; before: string }[],
  includeComments: boolean,
): Promise<Reading> {
  const pipelinesDir = await mkdtemp(join(tmpdir(), 'bench-dlt-'));
  try {
    companion.clearRequestLog();
    const input = {
      base_url: companion.baseUrl,
      api_key: companion.keys.admin,
      windows,
      include_comments: includeComments,
      pipelines_dir: pipelinesDir,
    };
    const run = await measured(
      python,
      [join(ROOT, 'bench/support/dlt-rest-api.py'), JSON.stringify(input)],
      childEnvironment({ RUNTIME__LOG_LEVEL: 'WARNING' }),
      'dlt',
    );
    const out = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
      wall_ms: number;
      rows: Record<string, number>;
    };
    return {
      reader: `dlt ${DLT_VERSION} rest_api → DuckDB`,
      wallMs: run.wallMs,
      pages: companion.requestLog.length,
      rows: sum(Object.values(out.rows)),
      peakRssBytes: run.usage?.peakRssBytes ?? null,
      cpuSeconds: run.usage?.cpuSeconds ?? null,
      note: `pipeline.run ${(out.wall_ms / 1000).toFixed(1)} s; ${JSON.stringify(out.rows)}`,
    };
  } finally {
    await rm(pipelinesDir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------
// One world

async function world(services: Services, tickets: number, withDlt: boolean): Promise<Reading[]> {
  log(`generating a ${tickets}-ticket world (seed ${seed})`);
  const companion = await startCompanion({ seed, tickets, rateLimits: false });
  const startDate = new Date(Date.now() - 200 * DAY_MS).toISOString();
  const target = await syncTarget(services, companion, {
    database: `bench_throughput_${tickets}`,
    taskQueue: `bench-throughput-${tickets}`,
    env: {
      SYNC_START_DATE: startDate,
      SUPPORT_API_RATE_LIMITS: 'off',
      LOG_LEVEL: process.env['BENCH_SYNC_LOG_LEVEL'] ?? 'warn',
    },
  });
  const settings = settingsFromConfig(target.config, new Date());
  const readings: Reading[] = [];
  try {
    log(`${tickets}: plain crawl`);
    const cpuBefore = process.cpuUsage();
    const crawl = await plainCrawl(companion, {
      startDate,
      until: new Date().toISOString(),
      threadConcurrency: settings.threadConcurrency,
      csatIncludeComments: settings.csatIncludeComments,
    });
    const cpu = process.cpuUsage(cpuBefore);
    readings.push({
      reader: `plain crawl (${settings.threadConcurrency} threads at a time, writes nothing)`,
      wallMs: crawl.ms,
      pages: crawl.requests,
      rows: crawl.rows,
      peakRssBytes: null,
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      note: 'in the bench process (the companion shares its CPU)',
    });

    if (withDlt) {
      const dlt = values['skip-dlt'] ? { skipped: '--skip-dlt' } : await provisionDlt();
      if ('skipped' in dlt) {
        log(`${tickets}: dlt skipped: ${dlt.skipped}`);
        readings.push({
          reader: 'dlt rest_api',
          wallMs: Number.NaN,
          pages: 0,
          rows: 0,
          peakRssBytes: null,
          cpuSeconds: null,
          note: `skipped: ${dlt.skipped}`,
        });
      } else {
        log(`${tickets}: dlt rest_api`);
        const windows = planWindows({
          from: startDate,
          to: new Date().toISOString(),
          maxWindowMs: MAX_EXPORT_WINDOW_MS,
        }).map((w) => ({ from: w.windowStart, before: w.windowEnd }));
        readings.push(await dltReading(companion, dlt.python, windows, settings.csatIncludeComments));
      }
    }

    log(`${tickets}: sync --once`);
    companion.clearRequestLog();
    const run = await measured(
      process.execPath,
      values.built
        ? ['dist/cli/main.js', 'sync', '--once']
        : ['--import', 'tsx', 'cli/main.ts', 'sync', '--once'],
      {
        ...process.env,
        ...target.env,
        ...(process.env['BENCH_SYNC_NODE_OPTIONS']
          ? { NODE_OPTIONS: process.env['BENCH_SYNC_NODE_OPTIONS'] }
          : {}),
      },
      'sync --once',
    );
    const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as {
      status: string;
      totals: { pages: number; rows: number };
    };
    if (summary.status !== 'succeeded') throw new Error(`sync --once: ${JSON.stringify(summary)}`);
    const db = new pg.Client({ connectionString: target.databaseUrl });
    await db.connect();
    let stored = 0;
    try {
      for (const t of STREAM_TABLE_NAMES)
        stored += Number(
          (await db.query<{ n: string }>(`SELECT count(*) AS n FROM support.${t}`)).rows[0]!.n,
        );
    } finally {
      await db.end();
    }
    readings.push({
      reader: 'sync --once → PostgreSQL',
      wallMs: run.wallMs,
      pages: companion.requestLog.length,
      rows: stored,
      peakRssBytes: run.usage?.peakRssBytes ?? null,
      cpuSeconds: run.usage?.cpuSeconds ?? null,
      note: `run's own pages ${summary.totals.pages}, rows ${summary.totals.rows} (requests include the reconciliation and the audit)`,
    });
  } finally {
    await companion.stop();
  }
  return readings;
}

// ---------------------------------------------------------------------------------------------------------

if (values.built && !existsSync(join(ROOT, 'dist/cli/main.js'))) {
  process.stderr.write('--built: no dist/cli/main.js; run `npm run build` first\n');
  process.exit(2);
}
const sizes = [Number(values.tickets), ...(values.large ? [Number(values['large-tickets'])] : [])];
const services = await startServices();
const results: Record<string, Reading[]> = {};
try {
  for (const [i, n] of sizes.entries()) results[n] = await world(services, n, i === 0 || values['dlt-large']);
} finally {
  await services.stop();
}

const mb = (b: number | null) => (b === null ? '' : `${Math.round(b / 2 ** 20)} MB`);
for (const [n, readings] of Object.entries(results)) {
  const crawl = readings[0]!;
  const dlt = readings.find((r) => r.reader.startsWith('dlt') && Number.isFinite(r.wallMs));
  console.log(`bench:throughput — ${n} tickets, seed ${seed}, rate limits off`);
  console.table(
    readings.map((r) => ({
      reader: r.reader,
      wall: Number.isFinite(r.wallMs) ? `${(r.wallMs / 1000).toFixed(1)} s` : '',
      pages: r.pages,
      'pages/s': Number.isFinite(r.wallMs) ? Math.round(r.pages / (r.wallMs / 1000)) : '',
      'rows/s': Number.isFinite(r.wallMs) ? Math.round(r.rows / (r.wallMs / 1000)) : '',
      'peak RSS': mb(r.peakRssBytes),
      'CPU s / 1k pages': r.cpuSeconds === null ? '' : ((r.cpuSeconds / r.pages) * 1000).toFixed(2),
      'wall / crawl': Number.isFinite(r.wallMs) ? (r.wallMs / crawl.wallMs).toFixed(2) : '',
      'wall / dlt': dlt && Number.isFinite(r.wallMs) ? (r.wallMs / dlt.wallMs).toFixed(2) : '',
    })),
  );
  for (const r of readings) if (r.note) console.log(`  ${r.reader}: ${r.note}`);
}
console.log(JSON.stringify({ seed, worlds: results }));
