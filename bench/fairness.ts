/**
 * Fairness on a shared worker fleet: one workspace's big backfill (many page activities at once) and many
 * small workspaces' scheduled runs (a few pages each) on the same workers, on the project's Temporal dev
 * server. How long each small run is delayed while the backfill runs, under
 *   (a) one task queue, nothing set;
 *   (b) task-queue priorities: the run modes' keys of schemas/run-input.ts (incremental 1, backfill 4);
 *   (c) fairness keys: the workspace id (server dynamic config matching.enableFairness=true);
 *   (d) a task queue per workspace (activities; one worker per queue, as the SDK polls one queue per worker);
 *   (e) priorities and fairness keys together (the run mode's priority, the workspace within it).
 * Each beside its floor: the same small runs without the backfill, measured just before in the same mode.
 * The activities are stubs that sleep like a page (`--page-ms`), so what is measured is Temporal's dispatch,
 * not the API or the warehouse. Run: npm run bench:fairness [-- --small 20 --backfill-pages 400 --slots 4]
 */
import { createRequire } from 'node:module';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { startTemporalDevServer } from '../embedded/temporal-server.js';
import { RUN_PRIORITY } from '../schemas/run-input.js';
import { bundleWorkflows } from '../worker/workflow-bundle.js';
import type { PagesRunInput } from './support/fairness-workflow.js';

const argv = process.argv.slice(2);
const num = (name: string, fallback: number) => {
  const i = argv.indexOf(`--${name}`);
  const v = i < 0 ? fallback : Number(argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
  return v;
};
const SMALL = num('small', 20);
const SMALL_PAGES = num('small-pages', 3);
const BACKFILL_PAGES = num('backfill-pages', 400);
/** Activities the backfill keeps scheduled at once: its lanes and windows side by side. */
const BACKFILL_PARALLEL = num('backfill-parallel', 100);
const PAGE_MS = num('page-ms', 100);
/** Activity slots of the worker fleet (of each worker in (d)). */
const SLOTS = num('slots', 4);
/** Time between two small runs' scheduled starts, the first a second after the backfill's. */
const STAGGER_MS = num('stagger-ms', 250);

type Mode = 'one-queue' | 'priorities' | 'fairness-keys' | 'queue-per-workspace' | 'priorities-and-fairness';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pageActivities = { page: (ms: number) => sleep(ms) };

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

interface Outcome {
  /** Each small run's wall time minus its pages' own time (SMALL_PAGES × PAGE_MS). */
  delays: number[];
  backfillMs: number | null;
}

async function scenario(env: TestWorkflowEnvironment, bundle: string, mode: Mode, backfill: boolean) {
  const queue = `fair-${mode}-${backfill ? 'b' : 'alone'}-${Date.now().toString(36)}`;
  const small = Array.from({ length: SMALL }, (_, i) => `ws-${i}`);
  const perWorkspace = mode === 'queue-per-workspace';
  const activityQueue = (ws: string) => (perWorkspace ? `${queue}-${ws}` : undefined);
  const connection = await NativeConnection.connect({ address: env.address });
  const workers = [
    await Worker.create({
      connection,
      taskQueue: queue,
      workflowBundle: { code: bundle },
      ...(perWorkspace ? {} : { activities: pageActivities, maxConcurrentActivityTaskExecutions: SLOTS }),
    }),
  ];
  if (perWorkspace) {
    for (const ws of ['big', ...small]) {
      workers.push(
        await Worker.create({
          connection,
          taskQueue: activityQueue(ws) as string,
          activities: pageActivities,
          maxConcurrentActivityTaskExecutions: SLOTS,
        }),
      );
    }
  }
  const running = workers.map((w) => w.run());
  const priority = (ws: string, runMode: 'incremental' | 'backfill') => {
    if (mode === 'priorities') return { priority: { priorityKey: RUN_PRIORITY[runMode] } };
    if (mode === 'fairness-keys') return { priority: { fairnessKey: ws } };
    if (mode === 'priorities-and-fairness')
      return { priority: { priorityKey: RUN_PRIORITY[runMode], fairnessKey: ws } };
    return {};
  };
  const start = (
    ws: string,
    input: Omit<PagesRunInput, 'activityQueue'>,
    runMode: 'incremental' | 'backfill',
  ) => {
    const q = activityQueue(ws);
    return env.client.workflow.start('pagesRun', {
      taskQueue: queue,
      workflowId: `${queue}-${ws}`,
      args: [{ ...input, ...(q ? { activityQueue: q } : {}) }],
      ...priority(ws, runMode),
    });
  };
  try {
    const t0 = performance.now();
    const big = backfill
      ? await start(
          'big',
          { pages: BACKFILL_PAGES, parallel: BACKFILL_PARALLEL, pageMs: PAGE_MS },
          'backfill',
        )
      : null;
    const bigDone = big?.result().then(() => performance.now() - t0);
    if (backfill) await sleep(1000);
    const delays = await Promise.all(
      small.map(async (ws, i) => {
        await sleep(i * STAGGER_MS);
        const s = performance.now();
        const h = await start(ws, { pages: SMALL_PAGES, parallel: 1, pageMs: PAGE_MS }, 'incremental');
        await h.result();
        return performance.now() - s - SMALL_PAGES * PAGE_MS;
      }),
    );
    const outcome: Outcome = { delays, backfillMs: bigDone ? await bigDone : null };
    return outcome;
  } finally {
    for (const w of workers) w.shutdown();
    await Promise.all(running);
    await connection.close();
  }
}

function line(label: string, o: Outcome, floor: number) {
  const d = o.delays;
  const f = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  console.log(
    `  ${label.padEnd(24)} small runs' delay: p50 ${f(pct(d, 50))}, p95 ${f(pct(d, 95))}, max ${f(Math.max(...d))}` +
      ` (alone: p50 ${f(floor)})${o.backfillMs !== null ? `; backfill ${f(o.backfillMs)}` : ''}`,
  );
}

Runtime.install({ logger: new DefaultLogger('ERROR') });
const require = createRequire(import.meta.url);
const bundle = await bundleWorkflows(require.resolve('./support/fairness-workflow.ts'));
console.log(
  `fairness: ${SMALL} small runs of ${SMALL_PAGES} pages (one at a time, started every ${STAGGER_MS} ms from 1 s in) ` +
    `beside a backfill of ${BACKFILL_PAGES} pages (${BACKFILL_PARALLEL} at once); stub pages of ${PAGE_MS} ms; ` +
    `${SLOTS} activity slots per worker`,
);
const plain = await startTemporalDevServer();
const fair = await startTemporalDevServer({ dynamicConfig: ['matching.enableFairness=true'] });
try {
  await scenario(plain, bundle, 'one-queue', false); // warms the server, the worker and the bundle up
  await scenario(fair, bundle, 'fairness-keys', false);
  const modes: [string, TestWorkflowEnvironment, Mode][] = [
    ['(a) one task queue', plain, 'one-queue'],
    ['(b) priorities', plain, 'priorities'],
    ['(c) fairness keys', fair, 'fairness-keys'],
    ['(d) queue per workspace', plain, 'queue-per-workspace'],
    ['(e) priorities + keys', fair, 'priorities-and-fairness'],
  ];
  for (const [label, env, mode] of modes) {
    const floor = pct((await scenario(env, bundle, mode, false)).delays, 50);
    line(label, await scenario(env, bundle, mode, true), floor);
  }
} finally {
  await fair.teardown();
  await plain.teardown();
}
