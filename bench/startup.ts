/**
 * `npx tsx bench/startup.ts`: how long `sync --once` takes from its process start to the run's first activity,
 * against a Temporal dev server already running (its own start is not counted), from source (`tsx`, which
 * bundles the workflows at start) and from `dist/` (`node dist/cli/main.js`, which loads the bundle
 * `npm run build` wrote). Each start is a fresh process, database and task queue; the figures are the median
 * and the range of `--runs` starts, with the part up to the workflow's start (configuration, connection,
 * preflight, local workers) beside it.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { startCompanion } from '../companion/index.js';
import { benchFlags, log, type Services, startServices } from './support/harness.js';

const EventType = proto.temporal.api.enums.v1.EventType;
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const flags = benchFlags(
  'npx tsx bench/startup.ts [--runs 5] [--only source|built]\n\n' +
    '`sync --once` start-up (process start → first activity) from source and from dist/ (run `npm run build` first).',
  { runs: { type: 'string', default: '5' }, only: { type: 'string' } },
);
const RUNS = Number(flags.runs);
if (!Number.isInteger(RUNS) || RUNS < 1)
  throw new Error(`--runs must be a positive integer, not ${flags.runs}`);

const VARIANTS = {
  source: [process.execPath, '--import', 'tsx', 'cli/main.ts'],
  built: [process.execPath, 'dist/cli/main.js'],
} as const;
type Variant = keyof typeof VARIANTS;

interface Start {
  /** Process start → the run's workflow started (configuration, preflight, local workers, the start call). */
  toWorkflowMs: number;
  /** Process start → the run's first activity started on a worker. */
  toFirstActivityMs: number;
}

async function oneStart(services: Services, variant: Variant, index: number): Promise<Start> {
  const taskQueue = `startup-${variant}-${index}-${process.pid}`;
  const companion = await startCompanion({ seed: Number(flags.seed), tickets: 20, rateLimits: false });
  try {
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '',
      HOME: process.env['HOME'] ?? '',
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: await services.postgres.createDatabase(`startup_${variant}_${index}`),
      TEMPORAL_ADDRESS: services.temporal.address,
      TEMPORAL_TASK_QUEUE: taskQueue,
      SUPPORT_API_RATE_LIMITS: 'off',
      SYNC_AUDIT_SHARE: '0',
      LOG_LEVEL: 'warn',
    };
    const [command, ...args] = VARIANTS[variant];
    const spawnedAt = Date.now();
    const child = spawn(command, [...args, 'sync', '--once'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    if (code !== 0) throw new Error(`${variant} sync --once exited ${code}:\n${stderr.slice(-2000)}`);
    const client = services.temporal.client;
    let runWorkflowId: string | undefined;
    for await (const w of client.workflow.list({
      query: `WorkflowType = 'syncRunWorkflow' AND TaskQueue = '${taskQueue}'`,
    }))
      runWorkflowId = w.workflowId;
    if (!runWorkflowId) throw new Error(`no syncRunWorkflow on ${taskQueue}`);
    const history = await client.workflow.getHandle(runWorkflowId).fetchHistory();
    const timeOf = (type: keyof typeof EventType) => {
      const t = history.events?.find((e) => e.eventType === EventType[type])?.eventTime;
      if (!t) throw new Error(`the run's history has no ${type}`);
      return Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
    };
    return {
      toWorkflowMs: timeOf('EVENT_TYPE_WORKFLOW_EXECUTION_STARTED') - spawnedAt,
      toFirstActivityMs: timeOf('EVENT_TYPE_ACTIVITY_TASK_STARTED') - spawnedAt,
    };
  } finally {
    await companion.stop();
  }
}

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  return `${(median / 1000).toFixed(2)} s (${(sorted[0]! / 1000).toFixed(2)}–${(sorted.at(-1)! / 1000).toFixed(2)})`;
}

const variants = (flags.only ? [flags.only] : Object.keys(VARIANTS)) as Variant[];
if (variants.includes('built') && !existsSync(`${ROOT}dist/cli/main.js`))
  throw new Error('dist/ is missing: run `npm run build` first (or --only source)');
const services = await startServices();
try {
  const rows: string[] = [];
  for (const variant of variants) {
    const starts: Start[] = [];
    for (let i = 0; i < RUNS; i++) {
      const start = await oneStart(services, variant, i);
      log(
        `${variant} #${i + 1}: workflow at ${start.toWorkflowMs} ms, first activity at ${start.toFirstActivityMs} ms`,
      );
      starts.push(start);
    }
    rows.push(
      `| ${variant} | ${summary(starts.map((s) => s.toWorkflowMs))} | ${summary(starts.map((s) => s.toFirstActivityMs))} |`,
    );
  }
  process.stdout.write(
    `sync --once start-up, ${RUNS} starts each, median (min–max), the dev server already running\n\n` +
      '| Variant | Process start → workflow started | Process start → first activity |\n|---|---|---|\n' +
      `${rows.join('\n')}\n`,
  );
} finally {
  await services.stop();
}
