import { randomInt } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COMMIT_PAGES } from '../../activities/thread-batch.js';
import { type CompanionHandle, Prng, type RequestLogEntry, startCompanion } from '../../companion/index.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig } from '../../worker/config.js';
import { sized } from '../support/campaign.js';
import { freshDatabase } from '../support/postgres.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';
import { DAY_MS, silentLogger } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource, rowCounts } from './warehouse-compare.js';
import { incrementalRunInput, killed, spawnWorker, startRun } from './worker-process.js';

/**
 * Kills in one sync: one in the test suite; three in `npm run campaign` (test/support/campaign.ts), where a
 * kill can also land while the replacing worker re-runs what the previous one had in flight.
 */
const KILLS = sized(1, 3);
const STREAM_PARALLELISM = 4;
const THREAD_CONCURRENCY = 4;
/**
 * Pages a kill can cost: the run has `STREAM_PARALLELISM` lanes, each running one child workflow that runs
 * one page activity at a time, except the tickets lane, whose threads child runs up to `THREAD_CONCURRENCY`
 * thread batches beside the tickets page; a batch group-commits its pages, so a kill re-fetches what it had
 * not committed: the commit being written and the one being filled (activities/thread-batch.ts). So lanes +
 * THREAD_CONCURRENCY × 2 × COMMIT_PAGES. (The workers' activity slots never bind.)
 */
const PAGES_IN_FLIGHT = STREAM_PARALLELISM + THREAD_CONCURRENCY * 2 * COMMIT_PAGES;

/**
 * The seed of the kill points: WORKER_KILL_SEED when set (to run a failure's kill points again), otherwise a
 * new one each run, so that runs explore different points. Printed before the first kill.
 */
function killSeed(): number {
  const fromEnv = process.env['WORKER_KILL_SEED'];
  if (fromEnv === undefined || fromEnv === '') return randomInt(2 ** 31);
  const seed = Number(fromEnv);
  if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`WORKER_KILL_SEED=${fromEnv}: not a seed`);
  return seed;
}

const requestKey = (r: RequestLogEntry) =>
  `${r.method} ${r.path}?${Object.entries(r.query)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join('&')}`;

describe('the worker killed with SIGKILL at random points during a sync', () => {
  let companion: CompanionHandle;
  let databaseUrl: string;
  let deps: Dependencies;
  let db: pg.Client;
  let env: Awaited<ReturnType<typeof connectToTestServer>>;
  let worker: ReturnType<typeof spawnWorker> | undefined;
  const taskQueue = `worker-kill-${Date.now().toString(36)}`;
  const from = new Date(Date.now() - 200 * DAY_MS).toISOString();

  beforeAll(async () => {
    companion = await startCompanion({ seed: 23, tickets: 70, rateLimits: false });
    databaseUrl = await freshDatabase('e2e_worker_kill');
    env = await connectToTestServer();
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    if (worker) await killed(worker.child);
    await db?.end();
    await deps?.close();
    await companion?.stop();
    await env?.teardown();
  });

  it(`completes after ${KILLS} kill(s), equal to the source, re-fetching only pages in flight`, async () => {
    const workerEnv = {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      SUPPORT_API_RATE_LIMITS: 'off',
      LOG_LEVEL: 'info',
    };
    const config = loadConfig({}, undefined, {
      ...workerEnv,
      SYNC_START_DATE: from,
      SYNC_WINDOW: 'P90D',
      SYNC_THREAD_LOOKBACK: 'PT0S',
      // Small pages: more pages per stream, so kills land between and inside pages.
      SYNC_PAGE_SIZE: '10',
      SYNC_STREAM_PARALLELISM: String(STREAM_PARALLELISM),
      // The audit re-reads thread pages the run read (by design): they would count as repeats here.
      SYNC_AUDIT_SHARE: '0',
    });
    deps = await buildDependencies(config, silentLogger);
    const seed = killSeed();
    // Each kill comes after a number (3–30) of new API requests since the worker was (re)started, plus 0–300
    // ms, so it lands inside page fetches, writes, or between activities. The points reproduce from the seed;
    // where in a page each kill lands also depends on timing.
    const prng = new Prng(seed);
    const killPoints = Array.from({ length: KILLS }, () => ({
      afterRequests: prng.int(3, 30),
      delayMs: prng.int(0, 299),
    }));
    const pointsText = killPoints.map((p) => `${p.afterRequests} requests + ${p.delayMs} ms`).join(', ');
    console.info(
      `worker-kill: seed ${seed}, kill points ${pointsText} (WORKER_KILL_SEED=${seed} repeats them)`,
    );

    worker = spawnWorker(workerEnv);
    await worker.ready;
    const input = incrementalRunInput(config, { threadConcurrency: THREAD_CONCURRENCY });
    const started = Date.now();
    const { result } = await startRun(env.client.workflow, taskQueue, input);

    const killAt: number[] = [];
    for (const [k, { afterRequests, delayMs }] of killPoints.entries()) {
      const base = companion.requestLog.length;
      const deadline = Date.now() + 60_000;
      while (companion.requestLog.length < base + afterRequests && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 10));
      }
      await new Promise((r) => setTimeout(r, delayMs));
      expect(
        companion.requestLog.length,
        `seed ${seed}, kill ${k + 1}: the sync made progress`,
      ).toBeGreaterThan(base);
      killAt.push(companion.requestLog.length);
      await killed(worker.child);
      worker = spawnWorker(workerEnv);
      await worker.ready;
    }
    expect(await result, `seed ${seed}`).toBe('succeeded');
    const elapsed = Date.now() - started;
    const log = companion.requestLog.slice();

    // Repeated GETs of the same (path, query incl. cursor), attributed to the kill they follow.
    const requested = new Set<string>();
    const repeatsPerKill = new Array<number>(KILLS).fill(0);
    const repeated: string[] = [];
    log.forEach((r, index) => {
      if (r.method !== 'GET') return;
      const key = requestKey(r);
      if (requested.has(key)) {
        repeated.push(key);
        const kill = killAt.filter((at) => at <= index).length - 1;
        repeatsPerKill[Math.max(0, kill)]! += 1;
      }
      requested.add(key);
    });
    console.info(
      `worker-kill: seed ${seed}, kills after requests ${killAt.join(', ')}, sync ${elapsed} ms, ` +
        `${log.length} requests, repeats per kill ${repeatsPerKill.join(', ')} (bound ${PAGES_IN_FLIGHT})`,
    );
    expect(repeated.length, `seed ${seed}:\n${repeated.join('\n')}`).toBeLessThanOrEqual(
      KILLS * PAGES_IN_FLIGHT,
    );
    for (const n of repeatsPerKill) expect(n, `seed ${seed}`).toBeLessThanOrEqual(PAGES_IN_FLIGHT);

    await rowCounts(db); // no duplicate ids in any table
    await expectWarehouseEqualsSource(db, await sourceSnapshot(deps.client, from));
    const run = await db.query('SELECT status FROM support._sync_runs WHERE run_id = $1', [input.runId]);
    expect(run.rows).toEqual([{ status: 'succeeded' }]);
  }, 300_000);
});
