import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkerProcess, type WorkerProcess } from '../../bench/support/worker-process.js';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { freePort, waitForPort } from '../../embedded/free-port.js';
import { locateTemporalCli } from '../../embedded/temporal-cli.js';
import { ALL_STREAMS } from '../../schemas/streams.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig, settingsFromConfig } from '../../worker/config.js';
import { newRunId, runSync } from '../../worker/run-sync.js';
import { freshDatabase } from '../support/postgres.js';
import { DAY_MS, silentLogger } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource } from './warehouse-compare.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FAULTS = { rate: 0.08, kinds: ['5xx', 'reset', 'slow', 'html'] as const, slowMs: 2000 };
const WINDOW_MS = 2000;

/**
 * Issue 14, as an operator runs it: a Temporal cluster the project did not start (a dev server launched by
 * hand, WITHOUT the sync's search attributes), the worker as its own process (`npm run worker`, which
 * registers them), `sync --once --no-local-worker`'s path, and a source failing 8 % of requests (5xx,
 * connection resets, slow answers, HTML error pages) under compressed rate limits. What the faults cost in
 * time is measured by `npm run bench:thread-faults` (a wall-clock ratio is the machine's load as much as the
 * code's); this test asserts the outcome: the sync completes and the warehouse equals the source.
 */
describe('progress under faults, on a cluster the project did not start', () => {
  let server: ChildProcess;
  let address: string;
  let client: Client;
  let connection: Connection;

  beforeAll(async () => {
    const cli = await locateTemporalCli();
    if (cli.kind !== 'existing-path') throw new Error('the temporal CLI is not built (npm run provision)');
    const port = await freePort();
    server = spawn(
      cli.path,
      [
        'server',
        'start-dev',
        '--ip',
        '127.0.0.1',
        '--port',
        String(port),
        '--headless',
        '--log-level',
        'error',
        // What docs/design/rate-budget.md asks of a cluster operator: one partition per class queue (exact rates).
        '--dynamic-config-value',
        'matching.numTaskqueueReadPartitions=1',
        '--dynamic-config-value',
        'matching.numTaskqueueWritePartitions=1',
      ],
      { stdio: 'ignore' },
    );
    address = `127.0.0.1:${port}`;
    await waitForPort('127.0.0.1', port, 60_000);
    connection = await Connection.connect({ address });
    client = new Client({ connection });
  });
  afterAll(async () => {
    await connection?.close();
    server?.kill('SIGTERM');
  });

  /** One complete sync of a fresh warehouse through a separate worker process, the source failing 8 %. */
  async function syncUnderFaults() {
    const companion: CompanionHandle = await startCompanion({
      seed: 41,
      tickets: 400,
      rateLimits: true,
      rateLimitWindowMs: WINDOW_MS,
      faults: { rate: FAULTS.rate, kinds: [...FAULTS.kinds], slowMs: FAULTS.slowMs },
    });
    const databaseUrl = await freshDatabase('e2e_faults');
    const env = {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: address,
      TEMPORAL_TASK_QUEUE: `faults-${Date.now().toString(36)}`,
      SUPPORT_API_RATE_WINDOW: `PT${WINDOW_MS / 1000}S`,
      SYNC_THREAD_REVERIFY_PER_RUN: '0',
      LOG_LEVEL: 'info',
    };
    const worker: WorkerProcess = await startWorkerProcess(env, () => undefined);
    let deps: Dependencies | undefined;
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const config = loadConfig({}, undefined, env);
      const now = new Date();
      const summary = await runSync(client, env.TEMPORAL_TASK_QUEUE, {
        runId: newRunId(now),
        mode: 'incremental',
        streams: [...ALL_STREAMS],
        settings: settingsFromConfig(config, now),
      });
      expect(summary.error).toBeUndefined();
      expect(summary.status).toBe('succeeded');
      const threads = await db.query(
        `SELECT extract(epoch FROM finished_at - started_at) * 1000 AS ms FROM support._sync_runs
         WHERE stream = 'ticket_messages' AND parent_run_id = $1`,
        [summary.run_id],
      );
      const injected = companion.requestLog.filter((r) => r.routeClass === null).length;
      // The truth, read with limits and faults off.
      companion.setOptions({ rateLimits: false, faults: undefined });
      deps = await buildDependencies(loadConfig({}, undefined, env), silentLogger);
      await expectWarehouseEqualsSource(
        db,
        await sourceSnapshot(deps.client, new Date(Date.now() - 500 * DAY_MS).toISOString()),
      );
      return { threadsMs: Number(threads.rows[0].ms), injected, requests: companion.requestLog.length };
    } finally {
      await worker.stop();
      await deps?.close();
      await db.end();
      await companion.stop();
    }
  }

  it('the worker registers the search attributes; under 8 % faults the sync completes, equal to the source', async () => {
    const before = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    expect(Object.keys(before.customAttributes ?? {})).not.toContain('SyncStream');
    // The worker process registers the search attributes at start; the sync asserts its own outcome.
    const faulty = await syncUnderFaults();
    const after = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    expect(Object.keys(after.customAttributes ?? {})).toEqual(
      expect.arrayContaining(['SyncStream', 'WindowStart', 'WindowEnd', 'SyncRunId']),
    );
    // For the log only: the time is this machine's (bench:thread-faults measures it against a baseline).
    console.info(
      `faults: threads stream ${Math.round(faulty.threadsMs)} ms with ${FAULTS.rate * 100} % faults (${faulty.injected} injected of ${faulty.requests} requests)`,
    );
    expect(faulty.injected).toBeGreaterThan(0);
  });

  it('setup registers the search attributes idempotently', async () => {
    const r = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'setup'], {
      cwd: ROOT,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: address,
        SUPPORT_API_URL: 'https://source.not-needed.invalid',
        SUPPORT_API_KEY: 'not-needed',
        DESTINATION_URL: 'postgres://not-needed/invalid',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    r.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => r.once('exit', resolve));
    expect(code).toBe(0);
    expect(out).toMatch(/added none; already there SyncStream, WindowStart, WindowEnd, SyncRunId/);
  });
});
