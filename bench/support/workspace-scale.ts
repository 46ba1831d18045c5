/**
 * One scale of bench:workspaces, measured in a world of its own: a companion of `count` small workspaces
 * (20–200 tickets), one big one and a few "alone" twins of small ones, a fresh Temporal dev server, a fresh
 * database on the shared PostgreSQL cluster, a fresh task queue and two worker processes. Then:
 *   1. each twin's first sync alone, one after the other, then the big workspace's twin's backfill alone:
 *      what each costs (wall and CPU) with nothing beside it;
 *   2. the first round: the big workspace's backfill, and 2 s later the small workspaces' first syncs, one
 *      every `gapMs` (as their schedules' phases spread them over an interval; 0: all at once), until all
 *      have ended;
 *   3. the hourly round: a few changes in every workspace (the companion's live changes), then every
 *      workspace's incremental run, paced the same way;
 *   4. what it left: requests per workspace (the companion's log, per workspace) against the lower bound,
 *      history events per run, children open at once, worker peak RSS, warehouse size, and the exactness
 *      check of a sample of workspaces (fails the bench when any count differs).
 */
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import pg from 'pg';
import type { RequestLogEntry, WorkspaceHandle } from '../../companion/index.js';
import type { EmbeddedPostgres } from '../../embedded/postgres.js';
import { startTemporalDevServer } from '../../embedded/temporal-server.js';
import type { SyncSettings } from '../../schemas/run-input.js';
import { analyticsQueueOf, loadConfig, settingsFromConfig } from '../../worker/config.js';
import { log, sum } from './harness.js';
import { cpuSince, treeCpuSeconds } from './process-cpu.js';
import {
  schemaOf,
  startCompanionOf,
  startWorkerFleet,
  workerExit,
  writeWorkspacesFile,
} from './workspace-fleet.js';
import {
  allExecutions,
  assertSucceeded,
  historyPerRun,
  maxOpenChildren,
  settleStatuses,
  type TimedRun,
  timedRun,
} from './workspace-runs.js';
import {
  CHECKED_TABLES,
  type CheckedTable,
  expectedRows,
  type ReadScope,
  requestBound,
  smallWorkspaces,
  type WorkspaceSpec,
} from './workspace-world.js';

const DAY_MS = 24 * 60 * 60 * 1000;

export interface ScaleOptions {
  count: number;
  bigTickets: number;
  seed: number;
  /** Small workspaces with an "alone" twin (their delay is measured against it), sampled for history too. */
  alone: number;
  /** Changes the companion makes in each workspace before the hourly round. */
  changes: number;
  workers: number;
  /**
   * Between two run starts of a round (ms): a fleet's schedules each fire at their workspace's phase of the
   * interval (cli/commands/schedule.ts, intervalOf), so runs arrive spread over it, not at once. 0 starts
   * every run of a round at once.
   */
  gapMs: number;
}

/** Request categories of the companion's log, as bench:pipeline counts them. */
type Category = 'tickets' | 'threads' | 'exports' | 'reference' | 'other';
function categoryOf(e: RequestLogEntry): Category {
  const p = e.path.replace(/^\/public\/v1/, '');
  if (p === '/tickets') return 'tickets';
  if (/^\/tickets\/\d+\/messages$/.test(p)) return 'threads';
  if (p === '/csat-surveys' || p === '/agent-sessions') return 'exports';
  if (['/views', '/tags', '/teams', '/agents', '/reports/metrics'].includes(p)) return 'reference';
  return 'other';
}
function requestsOf(ws: WorkspaceHandle): Record<Category, number> {
  const out = { tickets: 0, threads: 0, exports: 0, reference: 0, other: 0 };
  for (const e of ws.requestLog) out[categoryOf(e)] += 1;
  return out;
}

export interface ScaleResult {
  count: number;
  smallTickets: number;
  bigTickets: number;
  /** First round: until every small first sync ended; until the backfill ended too. */
  firstSmallMs: number;
  firstAllMs: number;
  backfillMs: number;
  hourlyMs: number;
  gapMs: number;
  /** CPU seconds of every process of the world (bench with its companion, workers, dev server, PostgreSQL). */
  cpu: {
    /** Each twin's first sync alone (median), and the big twin's backfill alone. */
    aloneSmall: number;
    aloneBig: number;
    /** The first round and the hourly round, by process and in all. */
    first: Record<string, number>;
    hourly: Record<string, number>;
  };
  /** Runs open at once, most, in each round (from their start and end times). */
  openRuns: { first: number; hourly: number };
  /** Small runs' wall in the hourly round: median and slowest. */
  hourlyRunMs: { median: number; max: number };
  firstPages: number;
  hourlyPages: number;
  /** Small workspaces, first sync: requests and lower bound, per workspace (means), and the worst ratio. */
  firstRequests: { mean: number; bound: number; worstRatio: number; byCategory: Record<Category, number> };
  bigRequests: { requests: number; bound: number };
  hourlyRequests: { mean: number; byCategory: Record<Category, number>; big: number };
  workerPeakRss: number[];
  history: {
    smallFirst: { median: number; max: number; executions: number };
    smallHourly: { median: number; max: number; executions: number };
    backfill: { events: number; executions: number };
    sampledChildren: number;
    maxOpenChildrenSmall: number;
    maxOpenChildrenBig: number;
    executionsListed: number;
  };
  /** Small runs' wall time in the first round, against the same workspaces' first syncs alone. */
  delay: {
    aloneMedianMs: number;
    sampledMaxDelayMs: number;
    sampledMedianDelayMs: number;
    slowestSmallMs: number;
    slowestSmallTickets: number;
    medianSmallMs: number;
    /**
     * The first round's small runs split by whether the backfill was still running when they ended
     * (beside it) or they started after it had ended: wall median and slowest, and how many.
     */
    beside: { runs: number; medianMs: number; slowestMs: number };
    after: { runs: number; medianMs: number; slowestMs: number };
  };
  warehouseBytes: number;
  /** pg_database_size of the database when created, before any workspace's tables. */
  emptyDatabaseBytes: number;
  checked: number;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : (s[Math.floor((s.length - 1) / 2)] as number);
};
const mean = (xs: number[]) => (xs.length === 0 ? 0 : sum(xs) / xs.length);

export async function measureScale(postgres: EmbeddedPostgres, o: ScaleOptions): Promise<ScaleResult> {
  const small = smallWorkspaces(o.count, o.seed);
  const twins: WorkspaceSpec[] = small.slice(0, o.alone).map((w, i) => ({ ...w, id: `alone-${i}` }));
  const big: WorkspaceSpec = { id: 'big', seed: o.seed * 10_000 + 9_999, tickets: o.bigTickets };
  const bigTwin: WorkspaceSpec = { ...big, id: 'big-alone' };
  // The deployment's own workspace (SUPPORT_API_KEY): served by the workers, never synced here.
  const home: WorkspaceSpec = { id: 'home', seed: o.seed, tickets: 20 };
  const tag = `${o.count}`;
  log(
    `[${tag}] generating ${o.count} small workspaces (${sum(small.map((w) => w.tickets))} tickets) + big ${o.bigTickets}`,
  );
  const companion = await startCompanionOf([home, big, bigTwin, ...small, ...twins]);
  const file = writeWorkspacesFile(
    companion,
    [big, bigTwin, ...small, ...twins].map((w) => w.id),
  );
  const temporal: TestWorkflowEnvironment = await startTemporalDevServer();
  const taskQueue = `bench-workspaces-${o.count}-${Date.now().toString(36)}`;
  const database = `bench_workspaces_${o.count}`;
  const databaseUrl = await postgres.createDatabase(database);
  const startDate = new Date(Date.now() - 200 * DAY_MS).toISOString();
  const env: Record<string, string> = {
    SUPPORT_API_URL: companion.baseUrl,
    SUPPORT_API_KEY: companion.workspace('home').keys.admin,
    DESTINATION_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SYNC_WORKSPACES_FILE: file.path,
    SYNC_START_DATE: startDate,
    SUPPORT_API_RATE_LIMITS: 'off',
    LOG_LEVEL: 'info',
  };
  // Every workspace's entry sets nothing of its own: one set of settings serves every run.
  const settings: SyncSettings = settingsFromConfig(loadConfig({}, undefined, env), new Date());
  if (settings.analyticsTaskQueue !== analyticsQueueOf(taskQueue))
    throw new Error('unexpected analytics queue');
  const workers = await startWorkerFleet(o.workers, env, log);
  // A worker that dies fails the bench at once instead of leaving its runs to wait for ever.
  const crash = workerExit(workers);
  const alive = <T>(p: Promise<T>) => Promise.race([p, crash.exited]);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  // What an empty database weighs already: the warehouse's own size is what grows beyond it.
  const emptyBytes = Number(
    (await db.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0]?.n,
  );
  const run = (
    workspace: string,
    mode: 'incremental' | 'backfill',
    range?: { from: string; before: string },
  ) => timedRun(temporal.client, taskQueue, { workspace, mode, settings, ...(range ? { range } : {}) });
  // A round's runs, one every gapMs (the first at once); resolves when all have ended.
  const paced = (specs: WorkspaceSpec[], mode: 'incremental') =>
    Promise.all(
      specs.map(async (w, i) => {
        if (o.gapMs > 0 && i > 0) await new Promise((r) => setTimeout(r, i * o.gapMs));
        return run(w.id, mode);
      }),
    );
  try {
    // 1. Each twin's first sync alone, then the big twin's backfill alone.
    const alone: TimedRun[] = [];
    const aloneCpu: number[] = [];
    for (const t of twins) {
      const before = treeCpuSeconds();
      alone.push(await alive(run(t.id, 'incremental')));
      aloneCpu.push(cpuSince(before)['total'] as number);
    }
    const bigBefore = treeCpuSeconds();
    const bigAlone = await alive(
      run(bigTwin.id, 'backfill', { from: startDate, before: new Date().toISOString() }),
    );
    const bigAloneCpu = cpuSince(bigBefore)['total'] as number;
    await settleStatuses(temporal.client, [...alone, bigAlone]);
    assertSucceeded(`[${tag}] alone`, [...alone, bigAlone]);
    const aloneMs = alone.map((r) => r.endedAt - r.startedAt);
    log(
      `[${tag}] alone: ${aloneMs.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s (CPU ${aloneCpu.map((c) => c.toFixed(1)).join(', ')} s); big backfill ${((bigAlone.endedAt - bigAlone.startedAt) / 1000).toFixed(1)} s (CPU ${bigAloneCpu.toFixed(1)} s)`,
    );

    // 2. The first round.
    for (const w of [big, ...small]) companion.workspace(w.id).clearRequestLog();
    const scope: ReadScope = { startMs: Date.parse(startDate), untilMs: Date.now() };
    const firstCpu = treeCpuSeconds();
    const firstStart = performance.now();
    const backfill = run('big', 'backfill', {
      from: startDate,
      before: new Date(scope.untilMs).toISOString(),
    });
    await new Promise((r) => setTimeout(r, 2000));
    log(
      `[${tag}] first round: backfill of big started, now ${o.count} small first syncs${o.gapMs > 0 ? `, one every ${o.gapMs} ms` : ' at once'}`,
    );
    const progress = setInterval(
      () => log(`[${tag}] first round: ${Math.round((performance.now() - firstStart) / 1000)} s`),
      30_000,
    );
    const firstSmall = await alive(paced(small, 'incremental'));
    const firstSmallEnd = performance.now();
    log(
      `[${tag}] first round: small runs done in ${((firstSmallEnd - firstStart) / 1000).toFixed(1)} s; waiting for the backfill`,
    );
    const big1 = await alive(backfill);
    clearInterval(progress);
    const firstAllEnd = performance.now();
    const firstRoundCpu = byComponent(cpuSince(firstCpu));
    await settleStatuses(temporal.client, [...firstSmall, big1]);
    assertSucceeded(`[${tag}] first round`, [...firstSmall, big1]);
    const firstReq = small.map((w) => ({ w, r: requestsOf(companion.workspace(w.id)) }));
    const bounds = new Map(
      small.map((w) => [w.id, sum(Object.values(requestBound(companion.workspace(w.id).world, scope)))]),
    );
    const firstTotals = firstReq.map(({ r }) => sum(Object.values(r)));
    const ratios = firstReq.map(({ w, r }) => sum(Object.values(r)) / (bounds.get(w.id) as number));
    const bigReq = sum(Object.values(requestsOf(companion.workspace('big'))));
    const bigBound = sum(Object.values(requestBound(companion.workspace('big').world, scope)));

    // 3. The hourly round.
    for (const w of [big, ...small]) {
      const ws = companion.workspace(w.id);
      ws.clearRequestLog();
      ws.live.tick(o.changes);
    }
    log(
      `[${tag}] hourly round: ${o.changes} changes in each workspace, then ${o.count + 1} incremental runs`,
    );
    const hourlyCpu = treeCpuSeconds();
    const hourlyStart = performance.now();
    const hourly = await alive(paced([big, ...small], 'incremental'));
    const hourlyEnd = performance.now();
    const hourlyRoundCpu = byComponent(cpuSince(hourlyCpu));
    await settleStatuses(temporal.client, hourly);
    assertSucceeded(`[${tag}] hourly round`, hourly);
    const hourlyReq = small.map((w) => requestsOf(companion.workspace(w.id)));
    const bigHourly = sum(Object.values(requestsOf(companion.workspace('big'))));
    log(`[${tag}] hourly round done in ${((hourlyEnd - hourlyStart) / 1000).toFixed(1)} s`);

    // 4. What Temporal kept.
    const executions = await allExecutions(temporal.client);
    const perRun = historyPerRun(executions);
    const eventsOf = (r: TimedRun) => perRun.get(r.workflowId) ?? { events: 0, executions: 0 };
    const sampledSmall = firstSmall.slice(0, o.alone);
    const childrenOf = async (runs: TimedRun[]) => {
      const roots = new Set(runs.map((r) => r.workflowId));
      const parents = executions.filter((e) => roots.has(e.rootExecution?.workflowId ?? e.workflowId));
      let max = 0;
      for (const e of parents)
        max = Math.max(max, await maxOpenChildren(temporal.client, e.workflowId, e.runId));
      return { max, parents: parents.length };
    };
    const childrenSmall = await childrenOf(sampledSmall);
    const childrenBig = await childrenOf([big1]);

    // The exactness check: the sample's warehouse against its world, table by table.
    const untilMs = Date.now();
    const checkedIds = [...sampledSmall.map((r) => r.workspace), 'big'];
    const problems: string[] = [];
    for (const id of checkedIds) {
      const expected = expectedRows(companion.workspace(id).world, { startMs: scope.startMs, untilMs });
      const stored = await liveRows(db, schemaOf(id));
      for (const t of CHECKED_TABLES)
        if (stored[t] !== expected[t])
          problems.push(`${id}.${t}: warehouse ${stored[t]}, world ${expected[t]}`);
    }
    if (problems.length > 0)
      throw new Error(
        `[${tag}] the warehouse differs from the companion's world:\n  ${problems.join('\n  ')}`,
      );
    const size = await db.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n');

    const smallWalls = firstSmall.map((r) => r.endedAt - r.startedAt);
    const slowest = smallWalls.indexOf(Math.max(...smallWalls));
    const sampledDelays = sampledSmall.map((r, i) => r.endedAt - r.startedAt - (aloneMs[i] as number));
    const byCategory = (rs: Record<Category, number>[]) =>
      Object.fromEntries(
        (['tickets', 'threads', 'exports', 'reference', 'other'] as const).map((c) => [
          c,
          mean(rs.map((r) => r[c])),
        ]),
      ) as Record<Category, number>;
    return {
      count: o.count,
      smallTickets: sum(small.map((w) => w.tickets)),
      bigTickets: o.bigTickets,
      firstSmallMs: firstSmallEnd - firstStart,
      firstAllMs: firstAllEnd - firstStart,
      backfillMs: big1.endedAt - big1.startedAt,
      hourlyMs: hourlyEnd - hourlyStart,
      gapMs: o.gapMs,
      cpu: {
        aloneSmall: median(aloneCpu),
        aloneBig: bigAloneCpu,
        first: firstRoundCpu,
        hourly: hourlyRoundCpu,
      },
      openRuns: { first: mostOpen([...firstSmall, big1]), hourly: mostOpen(hourly) },
      hourlyRunMs: {
        median: median(hourly.slice(1).map((r) => r.endedAt - r.startedAt)),
        max: Math.max(...hourly.slice(1).map((r) => r.endedAt - r.startedAt)),
      },
      firstPages: sum([...firstSmall, big1].map((r) => r.pages)),
      hourlyPages: sum(hourly.map((r) => r.pages)),
      firstRequests: {
        mean: mean(firstTotals),
        bound: mean([...bounds.values()]),
        worstRatio: Math.max(...ratios),
        byCategory: byCategory(firstReq.map(({ r }) => r)),
      },
      bigRequests: { requests: bigReq, bound: bigBound },
      hourlyRequests: {
        mean: mean(hourlyReq.map((r) => sum(Object.values(r)))),
        byCategory: byCategory(hourlyReq),
        big: bigHourly,
      },
      workerPeakRss: workers.map((w) => w.hwm()),
      history: {
        smallFirst: {
          median: median(firstSmall.map((r) => eventsOf(r).events)),
          max: Math.max(...firstSmall.map((r) => eventsOf(r).events)),
          executions: median(firstSmall.map((r) => eventsOf(r).executions)),
        },
        smallHourly: {
          median: median(hourly.slice(1).map((r) => eventsOf(r).events)),
          max: Math.max(...hourly.slice(1).map((r) => eventsOf(r).events)),
          executions: median(hourly.slice(1).map((r) => eventsOf(r).executions)),
        },
        backfill: eventsOf(big1),
        sampledChildren: childrenSmall.parents + childrenBig.parents,
        maxOpenChildrenSmall: childrenSmall.max,
        maxOpenChildrenBig: childrenBig.max,
        executionsListed: executions.length,
      },
      delay: {
        aloneMedianMs: median(aloneMs),
        sampledMaxDelayMs: Math.max(...sampledDelays),
        sampledMedianDelayMs: median(sampledDelays),
        slowestSmallMs: smallWalls[slowest] as number,
        slowestSmallTickets: (small[slowest] as WorkspaceSpec).tickets,
        medianSmallMs: median(smallWalls),
        beside: wallsOf(firstSmall.filter((r) => r.endedAt <= big1.endedAt)),
        after: wallsOf(firstSmall.filter((r) => r.startedAt >= big1.endedAt)),
      },
      warehouseBytes: Number(size.rows[0]?.n),
      emptyDatabaseBytes: emptyBytes,
      checked: checkedIds.length,
    };
  } finally {
    crash.disarm();
    await Promise.all(workers.map((w) => w.stop()));
    await db.end();
    await temporal.teardown();
    await companion.stop();
    file.remove();
  }
}

/**
 * A round's CPU under the names of what spent it: the bench process (with the companion it serves), the
 * worker processes (node names its main thread `MainThread`), the dev server, PostgreSQL.
 */
function byComponent(cpu: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, seconds] of Object.entries(cpu)) {
    const label =
      name === 'self'
        ? 'bench+companion'
        : name === 'MainThread' || name === 'node'
          ? 'workers'
          : name.startsWith('temporal')
            ? 'temporal'
            : name;
    out[label] = (out[label] ?? 0) + seconds;
  }
  return out;
}

function wallsOf(runs: TimedRun[]): { runs: number; medianMs: number; slowestMs: number } {
  const walls = runs.map((r) => r.endedAt - r.startedAt);
  return { runs: runs.length, medianMs: median(walls), slowestMs: walls.length ? Math.max(...walls) : 0 };
}

/** The most runs open at once: a sweep over their starts and ends. */
function mostOpen(runs: TimedRun[]): number {
  const edges = runs.flatMap((r) => [
    { at: r.startedAt, d: 1 },
    { at: r.endedAt, d: -1 },
  ]);
  edges.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const e of edges) {
    open += e.d;
    most = Math.max(most, open);
  }
  return most;
}

/** Live rows (not marked deleted) of each checked table of a workspace's schema. */
async function liveRows(db: pg.Client, schema: string): Promise<Record<CheckedTable, number>> {
  const out = {} as Record<CheckedTable, number>;
  for (const table of CHECKED_TABLES) {
    const deleted = await db.query(
      `SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = '_deleted_at'`,
      [schema, table],
    );
    const where = deleted.rowCount ? ' WHERE _deleted_at IS NULL' : '';
    const r = await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${schema}.${table}${where}`);
    out[table] = Number(r.rows[0]?.n);
  }
  return out;
}
