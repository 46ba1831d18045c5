import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerProcess, type WorkerProcess } from '../../bench/support/worker-process.js';
import { type CompanionHandle, type RouteClass, startCompanion } from '../../companion/index.js';
import { keyFingerprint } from '../../connectors/support-api/index.js';
import { Secret } from '../../schemas/secret.js';
import { ALL_STREAMS } from '../../schemas/streams.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig, settingsFromConfig } from '../../worker/config.js';
import { newRunId, runSync } from '../../worker/run-sync.js';
import { fleetBudgetWorkflowId } from '../../workflows/fleet-budget-api.js';
import { freshDatabase } from '../support/postgres.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';
import { DAY_MS, silentLogger } from './harness.js';
import { requestsPerWindow } from './rate-windows.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource } from './warehouse-compare.js';

const WORKERS = 3;
const WINDOW_MS = 2000;
/** Small limits, so that three processes on one key would each spend the whole budget without a fleet budget. */
const LIMITS = { list: 4, detail: 10, analytics: 3, directory: 4 } as const;
const limitOf = (c: RouteClass) => (LIMITS as Record<string, number>)[c] ?? 30;

/**
 * Issue 11: the rate budget holds for the whole fleet. Three worker processes (`npm run worker`) on one key
 * and one task queue, against the companion enforcing compressed limits: the key's budget workflow hands
 * each window's requests to all of them together (issue 22).
 */
describe(`${WORKERS} worker processes on one key share one budget per route class`, () => {
  let companion: CompanionHandle;
  let db: pg.Client;
  let deps: Dependencies;
  let env: Awaited<ReturnType<typeof connectToTestServer>>;
  const workers: WorkerProcess[] = [];
  const taskQueue = `fleet-${Date.now().toString(36)}`;
  let workerEnv: Record<string, string>;

  beforeAll(async () => {
    companion = await startCompanion({
      seed: 31,
      tickets: 80,
      rateLimits: true,
      rateLimitWindowMs: WINDOW_MS,
      rateLimitOverrides: LIMITS,
    });
    const databaseUrl = await freshDatabase('e2e_fleet');
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    env = await connectToTestServer();
    workerEnv = {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      SUPPORT_API_RATE_LIMITS: Object.entries(LIMITS)
        .map(([c, n]) => `${c}=${n}`)
        .join(','),
      SUPPORT_API_RATE_WINDOW: `PT${WINDOW_MS / 1000}S`,
      SYNC_THREAD_REVERIFY_PER_RUN: '0',
      LOG_LEVEL: 'info',
    };
    deps = await buildDependencies(loadConfig({}, undefined, workerEnv), silentLogger);
    for (let i = 0; i < WORKERS; i++) workers.push(await startWorkerProcess(workerEnv, () => undefined));
  });
  afterAll(async () => {
    for (const w of workers) await w.stop();
    await db?.end();
    await deps?.close();
    await companion?.stop();
    await env?.teardown();
  });

  it('a sync completes with 0 429s, never over a limit in any window, equal to the source', async () => {
    const config = loadConfig({}, undefined, workerEnv);
    const now = new Date();
    const summary = await runSync(env.client, taskQueue, {
      runId: newRunId(now),
      mode: 'incremental',
      streams: [...ALL_STREAMS],
      settings: settingsFromConfig(config, now),
    });
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    const { over, perClass, rateLimited } = requestsPerWindow(companion.requestLog, WINDOW_MS, limitOf);
    console.info(
      `fleet: ${WORKERS} workers, per class ${JSON.stringify(perClass)}, ${rateLimited.length} 429s`,
    );
    expect(rateLimited.map((r) => `${r.routeClass} ${r.path}`)).toEqual([]);
    expect(over, 'route class windows over the limit').toEqual([]);
    // The key's budget workflow spent whole windows for the fleet: the detail class (82 requests, 10 a
    // window) filled a window to its limit.
    expect(perClass.detail?.max_per_window).toBe(LIMITS.detail);
    const budget = await env.client.workflow
      .getHandle(fleetBudgetWorkflowId(taskQueue, keyFingerprint(new Secret(companion.keys.admin))))
      .describe();
    expect(budget.type).toBe('fleetBudgetWorkflow');
    // Every process polls every route class's queue: the server hands each class's budget to all of them.
    for (const routeClass of ['list', 'detail', 'analytics', 'directory'] as const) {
      const described = await env.client.workflowService.describeTaskQueue({
        namespace: 'default',
        taskQueue: { name: `${taskQueue}-${routeClass}` },
        taskQueueType: 2, // TASK_QUEUE_TYPE_ACTIVITY
      });
      const identities = new Set((described.pollers ?? []).map((p) => p.identity));
      expect(identities.size, `${routeClass} pollers`).toBe(WORKERS);
    }

    companion.setOptions({ rateLimits: false });
    await expectWarehouseEqualsSource(
      db,
      await sourceSnapshot(deps.client, new Date(Date.now() - 500 * DAY_MS).toISOString()),
    );
  });
});
