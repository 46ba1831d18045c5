/**
 * Records the workflow histories that `test/workflows/replay.test.ts` replays against the current workflow
 * code (`npm run record-histories`; when and why: test/workflows/README.md).
 *
 * Everything is started here and thrown away afterwards: a Temporal dev server (in memory), an embedded
 * PostgreSQL cluster, a small seeded companion (24 tickets, so the files stay small) and this process's
 * workers with the real activities. Five runs, as operators meet them:
 *  - initial-sync: the first run of an empty warehouse, whole history (the exports wait for the first sweep);
 *  - incremental: the next run, after the workspace changed;
 *  - failed-window: a run in which every agent-sessions request answers 400 (its window fails, the run too);
 *  - window-replay: that window re-run by the CLI (`replay <id> --wait`), as on-call does (docs/operations/replay-failed-window.md);
 *  - full-refresh: `sync --full-refresh`.
 * Each scenario's folder under test/workflows/histories/ is replaced with one JSON file per execution, child
 * workflows and continued runs included, once all five are recorded and checked for the API keys and the
 * database password. Other folders there are left alone.
 *
 * `--before <patch-id>` records into `before-<patch-id>/<scenario>/` instead: run it on the code before a
 * workflow change that `patched('<patch-id>')` guards, so the replay test keeps proving the old path while
 * the patch lives (the versioning rule: workflows/README.md).
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Client } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import pino from 'pino';
import { type CompanionHandle, startCompanion } from '../companion/index.js';
import { startEmbeddedPostgres } from '../embedded/postgres.js';
import { startTemporalDevServer } from '../embedded/temporal-server.js';
import type { Config } from '../schemas/config.js';
import type { SyncMode } from '../schemas/run-input.js';
import { ALL_STREAMS } from '../schemas/streams.js';
import {
  HISTORIES_DIR,
  historyFileName,
  RECORDED_SCENARIOS,
  type RecordedScenario,
} from '../test/workflows/history-files.js';
import { historyToJson } from '../test/workflows/history-json.js';
import { buildDependencies } from '../worker/compose.js';
import { loadConfig, settingsFromConfig } from '../worker/config.js';
import { newRunId, type RunSummary, runSync } from '../worker/run-sync.js';
import { startWorkers } from '../worker/workers.js';
import { bundleWorkflows } from '../worker/workflow-bundle.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** The CLI entry point on-call runs (`npm run cli -- replay …`). */
const CLI_ENTRY = 'cli/main.ts';
const TASK_QUEUE = 'record-histories';
const WORLD = { seed: 29, tickets: 24 };

const log = (line: string) => process.stderr.write(`[record-histories] ${line}\n`);

const { values: flags } = parseArgs({ options: { before: { type: 'string' } } });
if (flags.before !== undefined && !/^[a-z0-9][a-z0-9-]*$/.test(flags.before)) {
  process.stderr.write(
    `--before ${JSON.stringify(flags.before)}: a patch id is lower-case letters, digits and "-"\n`,
  );
  process.exit(2);
}
/** Where the scenarios go: their own folders, or the folder of the histories recorded before a patch. */
const TARGET_DIR = flags.before === undefined ? HISTORIES_DIR : join(HISTORIES_DIR, `before-${flags.before}`);

// Workers log every state change at INFO; this script prints its own progress.
Runtime.install({ logger: new DefaultLogger('WARN') });

/** What was started, stopped in reverse order however the script ends. */
const running: (() => Promise<void>)[] = [];
async function started<T>(thing: Promise<T>, stop: (t: T) => Promise<void>): Promise<T> {
  const t = await thing;
  running.unshift(() => stop(t));
  return t;
}

const recorded = new Set<string>(); // run ids of the executions written so far
// Written here first, and put in place only when every scenario is recorded and clean: a failed recording
// leaves the committed histories as they were, never half old and half new.
const staging = mkdtempSync(join(tmpdir(), 'support-sync-histories-'));
running.push(async () => rmSync(staging, { recursive: true, force: true }));
let temporal!: Awaited<ReturnType<typeof startTemporalDevServer>>;
try {
  temporal = await started(startTemporalDevServer({ log }), (t) => t.teardown());
  const postgres = await started(startEmbeddedPostgres({ log }), (p) => p.stop());
  const companion = await started(startCompanion({ ...WORLD, rateLimits: false }), (c) => c.stop());
  const env = {
    SUPPORT_API_URL: companion.baseUrl,
    SUPPORT_API_KEY: companion.keys.admin,
    DESTINATION_URL: await postgres.createDatabase('record_histories'),
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_TASK_QUEUE: TASK_QUEUE,
    SUPPORT_API_RATE_LIMITS: 'off',
    // A few threads re-read per run: the rolling re-read's path is in the histories, without a page per ticket.
    SYNC_THREAD_REVERIFY_PER_RUN: '4',
    REPORT_QUERIES: join(ROOT, 'examples/report-queries.yaml'),
    LOG_LEVEL: 'silent',
  };
  const config = loadConfig({}, undefined, env);
  const deps = await started(buildDependencies(config, pino({ level: 'silent' })), (d) => d.close());
  await started(
    startWorkers({
      connection: temporal.nativeConnection,
      namespace: 'default',
      taskQueue: TASK_QUEUE,
      activities: deps.activities,
      workflowBundle: { code: await bundleWorkflows() },
      shutdownGraceTime: '5 seconds',
    }),
    (w) => w.shutdown(),
  );
  const sync = (mode: SyncMode) => () => syncRun(config, mode);

  await record('initial-sync', sync('incremental'), 'succeeded');

  companion.live.tick(12); // new tickets and replies, status changes, late CSAT answers, sessions
  await record('incremental', sync('incremental'), 'succeeded');

  log('failed-window: every agent-sessions request answers 400 on purpose (the warnings below are expected)');
  companion.setOptions({
    faults: {
      rate: 0,
      kinds: [],
      reject: [{ path: '/agent-sessions', status: 400, code: 'VALIDATION_ERROR' }],
    },
  });
  const failed = await record('failed-window', sync('incremental'), 'failed');
  companion.setOptions({ faults: undefined });
  const windowId = failedWindowId(failed);
  await record('window-replay', () => cliReplay(windowId, env), 'succeeded');

  await record('full-refresh', sync('full_refresh'), 'succeeded');
  assertNoSecrets(companion, env.DESTINATION_URL);
  for (const scenario of RECORDED_SCENARIOS) {
    rmSync(join(TARGET_DIR, scenario), { recursive: true, force: true });
    cpSync(join(staging, scenario), join(TARGET_DIR, scenario), { recursive: true });
  }
  log(`done: ${TARGET_DIR}`);
} finally {
  for (const stop of running) await stop();
}

/** Runs one scenario, checks how it ended, and writes the histories of every execution it started. */
async function record(
  scenario: RecordedScenario,
  run: () => Promise<{ status: string; summary: unknown }>,
  expected: 'succeeded' | 'failed',
): Promise<unknown> {
  const t0 = Date.now();
  const { status, summary } = await run();
  if (status !== expected)
    throw new Error(`${scenario}: the run ${status}, expected ${expected}: ${JSON.stringify(summary)}`);
  const files = await writeHistories(scenario, temporal.client);
  log(`${scenario}: ${status} in ${((Date.now() - t0) / 1000).toFixed(1)} s, ${files} histories`);
  return summary;
}

function syncRun(config: Config, mode: SyncMode): Promise<{ status: string; summary: RunSummary }> {
  const now = new Date();
  return runSync(temporal.client, TASK_QUEUE, {
    runId: newRunId(now),
    mode,
    streams: [...ALL_STREAMS],
    settings: settingsFromConfig(config, now),
  }).then((summary) => ({ status: summary.status, summary }));
}

/** The window the failed run names (`<pass>/<from>/<before>: GET … failed: HTTP 400 …`). */
function failedWindowId(summary: unknown): string {
  const error = (summary as RunSummary).error ?? '';
  const instant = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z';
  const id = new RegExp(`agent_sessions/${instant}/${instant}`).exec(error)?.[0];
  if (!id) throw new Error(`failed-window: no agent_sessions window named in "${error}"`);
  return id;
}

/** `npm run cli -- replay <id> --wait --no-local-worker`, served by this process's workers. */
function cliReplay(
  workflowId: string,
  env: Record<string, string>,
): Promise<{ status: string; summary: unknown }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', CLI_ENTRY, 'replay', workflowId, '--wait', '--no-local-worker'],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`replay exited with ${code}:\n${stderr}${stdout}`));
      const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as { status: string };
      resolve({ status: summary.status, summary });
    });
  });
}

/**
 * Writes every execution not written yet (this server runs nothing else, so these are the scenario's: the
 * run, its children and their continued runs) into the scenario's staging folder. Waits until every one of
 * them is closed: a history still growing would replay as a shorter run than the one recorded.
 */
async function writeHistories(scenario: RecordedScenario, client: Client): Promise<number> {
  let executions: { workflowId: string; runId: string; startTime: Date }[] = [];
  for (let attempt = 0; ; attempt++) {
    const listed = [];
    for await (const e of client.workflow.list()) {
      if (!recorded.has(e.runId)) listed.push(e);
    }
    if (listed.length > 0 && listed.every((e) => e.status.name !== 'RUNNING')) {
      executions = listed;
      break;
    }
    if (attempt >= 30) throw new Error(`${scenario}: executions still running after 30 s`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  executions.sort((a, b) => a.startTime.getTime() - b.startTime.getTime() || a.runId.localeCompare(b.runId));
  const dir = join(staging, scenario);
  mkdirSync(dir, { recursive: true });
  const perStream = new Map<string, number>();
  for (const e of executions) {
    const stream = e.workflowId.split('/')[0]!;
    perStream.set(stream, (perStream.get(stream) ?? 0) + 1);
  }
  const recordedOfStream = new Map<string, number>();
  for (const e of executions) {
    const stream = e.workflowId.split('/')[0]!;
    const ordinal = (recordedOfStream.get(stream) ?? 0) + 1;
    recordedOfStream.set(stream, ordinal);
    const history = await client.workflow.getHandle(e.workflowId, e.runId).fetchHistory();
    const name = historyFileName(e.workflowId, perStream.get(stream)! > 1 ? ordinal : null);
    writeFileSync(join(dir, name), `${historyToJson(history)}\n`);
    recorded.add(e.runId);
  }
  return executions.length;
}

/** No API key of the companion and no database password in any file written (they must never enter history). */
function assertNoSecrets(source: CompanionHandle, destinationUrl: string): void {
  const password = new URL(destinationUrl).password;
  const secrets = [...Object.values(source.keys), ...(password ? [password] : [])];
  for (const scenario of RECORDED_SCENARIOS) {
    const dir = join(staging, scenario);
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), 'utf8');
      if (secrets.some((s) => text.includes(s)))
        throw new Error(`${scenario}/${file} contains a secret: delete the folder and find the leak`);
    }
  }
}
