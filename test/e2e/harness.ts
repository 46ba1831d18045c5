import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundle } from '@temporalio/worker';
import pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import { type CompanionHandle, type CompanionOptions, startCompanion } from '../../companion/index.js';
import type { Config } from '../../schemas/config.js';
import type { SyncMode, SyncRunInput } from '../../schemas/run-input.js';
import type { StreamName } from '../../schemas/streams.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig, settingsFromConfig } from '../../worker/config.js';
import { newRunId, type RunSummary, runSync } from '../../worker/run-sync.js';
import { pacingOf, type RunningWorkers, startWorkers } from '../../worker/workers.js';
import { freshDatabase } from '../support/postgres.js';
import { connectToTestServer } from '../support/temporal.js';

export const DAY_MS = 24 * 60 * 60 * 1000;
export const silentLogger = pino({ level: 'silent' });

let bundle: Promise<WorkflowBundle> | undefined;
/** The workflow bundle the global setup built once for the whole run (test/support/global-setup.ts). */
export function workflowBundle(): Promise<WorkflowBundle> {
  bundle ??= readFile(inject('workflowBundlePath'), 'utf8').then((code) => ({ code }));
  return bundle;
}

export interface Pipeline {
  companion: CompanionHandle;
  env: TestWorkflowEnvironment;
  config: Config;
  databaseUrl: string;
  db: pg.Client;
  deps: Dependencies;
  workers: RunningWorkers | undefined;
  taskQueue: string;
  run(
    mode: SyncMode,
    overrides?: Partial<SyncRunInput['settings']>,
    streams?: StreamName[],
  ): Promise<RunSummary>;
  startWorkers(): Promise<void>;
  stopWorkers(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A real pipeline for a test file: the companion over HTTP, a fresh PostgreSQL database, the run's Temporal
 * dev server, and real workers with the real activities, on a task queue of its own.
 */
export async function startPipeline(
  label: string,
  options: { companion?: CompanionOptions; env?: Record<string, string>; workers?: boolean } = {},
): Promise<Pipeline> {
  const companion = await startCompanion({ seed: 11, tickets: 120, rateLimits: false, ...options.companion });
  const databaseUrl = await freshDatabase(label);
  const env = await connectToTestServer();
  const taskQueue = options.env?.['TEMPORAL_TASK_QUEUE'] ?? `${label}-${randomBytes(3).toString('hex')}`;
  const config = loadConfig({}, undefined, {
    SUPPORT_API_URL: companion.baseUrl,
    SUPPORT_API_KEY: companion.keys.admin,
    DESTINATION_URL: databaseUrl,
    TEMPORAL_TASK_QUEUE: taskQueue,
    SYNC_START_DATE: new Date(Date.now() - 200 * DAY_MS).toISOString(),
    SYNC_WINDOW: 'P90D',
    SYNC_THREAD_LOOKBACK: 'PT0S',
    // The companion's limits are off in most tests: no server-side pacing either (tests that turn limits
    // on set SUPPORT_API_RATE_LIMITS / SUPPORT_API_RATE_WINDOW to match).
    SUPPORT_API_RATE_LIMITS: 'off',
    // The audit after each run re-reads rows of its own (threads, export pages, ticket details): tests that
    // count a run's requests would see them. test/e2e/audit.test.ts turns it on.
    SYNC_AUDIT_SHARE: '0',
    LOG_LEVEL: 'silent',
    ...options.env,
  });
  const deps = await buildDependencies(config, silentLogger);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const pipeline: Pipeline = {
    companion,
    env,
    config,
    databaseUrl,
    db,
    deps,
    workers: undefined,
    taskQueue,
    async startWorkers() {
      pipeline.workers = await startWorkers({
        connection: env.nativeConnection,
        namespace: 'default',
        taskQueue,
        activities: deps.activities,
        ...pacingOf(config),
        workflowBundle: await workflowBundle(),
        shutdownGraceTime: '5 seconds',
      });
    },
    async stopWorkers() {
      await pipeline.workers?.shutdown();
      pipeline.workers = undefined;
    },
    // The streams of the configuration (SYNC_STREAMS, default all), as the CLI takes them without --streams.
    async run(mode, overrides = {}, streams = config.SYNC_STREAMS) {
      const now = new Date();
      return runSync(env.client, taskQueue, {
        runId: newRunId(now),
        mode,
        streams,
        settings: { ...settingsFromConfig(config, now), ...overrides },
      });
    },
    async close() {
      await pipeline.stopWorkers();
      await db.end();
      await deps.close();
      await companion.stop();
      await env.teardown();
    },
  };
  if (options.workers !== false) await pipeline.startWorkers();
  return pipeline;
}
