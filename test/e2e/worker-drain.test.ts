import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig } from '../../worker/config.js';
import { freshDatabase } from '../support/postgres.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';
import { silentLogger } from './harness.js';
import { type RewritingProxy, startRewritingProxy } from './rewriting-proxy.js';
import { incrementalRunInput, killed, spawnWorker, startRun } from './worker-process.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `support-sync worker --metrics-port 127.0.0.1:0` and the URL of its endpoint, once it is listening. */
function workerWithProbes(env: Record<string, string>) {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', 'cli/main.ts', 'worker', '--metrics-port', '0'],
    { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  const base = new Promise<string>((resolve, reject) => {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
      const url = /"url":"(http:[^"]+)\/metrics"/.exec(stderr)?.[1];
      if (url) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before listening:\n${stderr}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, base, exited, stderr: () => stderr };
}

async function probe(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.text()).trim() };
}

/**
 * The worker as an orchestrator runs it: `/healthz` answers as soon as the process serves, `/readyz` once the
 * workers poll Temporal and no longer once SIGTERM arrived; SIGTERM lets an activity in flight finish (its
 * page written), then the process exits 0; a second worker completes the run. The page's request is held at
 * a proxy in front of the companion, so that SIGTERM lands while it is in flight, whatever the timing.
 */
describe('the worker: probes and a graceful SIGTERM', () => {
  let companion: CompanionHandle;
  let proxy: RewritingProxy;
  let databaseUrl: string;
  let db: pg.Client;
  let deps: Dependencies;
  let temporal: Awaited<ReturnType<typeof connectToTestServer>>;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    companion = await startCompanion({ seed: 31, tickets: 10, rateLimits: false });
    proxy = await startRewritingProxy();
    proxy.target = companion.baseUrl;
    databaseUrl = await freshDatabase('e2e_worker_drain');
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    temporal = await connectToTestServer();
  });
  afterAll(async () => {
    for (const child of children) await killed(child);
    await db?.end();
    await deps?.close();
    await proxy?.close();
    await companion?.stop();
    await temporal?.teardown();
  });

  it('healthz, readyz, then SIGTERM: the page in flight completes, exit 0', async () => {
    const taskQueue = `drain-${Date.now().toString(36)}`;
    const env = {
      SUPPORT_API_URL: proxy.url,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      SUPPORT_API_RATE_LIMITS: 'off',
      LOG_LEVEL: 'info',
    };
    const config = loadConfig({}, undefined, { ...env, SYNC_AUDIT_SHARE: '0' });
    deps = await buildDependencies(config, silentLogger);

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let heldSince: number | undefined;
    proxy.gate = (method, path) => {
      if (method !== 'GET' || path !== '/agents' || heldSince !== undefined) return null;
      heldSince = Date.now();
      return held;
    };

    const worker = workerWithProbes(env);
    children.push(worker.child);
    const base = await worker.base;
    expect(new URL(base).hostname).toBe('127.0.0.1'); // METRICS_HOST's default: the loopback interface
    expect(await probe(`${base}/healthz`)).toEqual({ status: 200, body: 'ok' });
    let ready = await probe(`${base}/readyz`);
    for (const deadline = Date.now() + 60_000; ready.status !== 200 && Date.now() < deadline; ) {
      expect(ready.status).toBe(503);
      await sleep(200);
      ready = await probe(`${base}/readyz`);
    }
    expect(ready).toEqual({ status: 200, body: 'ready: 5 workers polling' });

    const input = incrementalRunInput(config);
    const { result } = await startRun(temporal.client.workflow, taskQueue, input);
    for (const deadline = Date.now() + 60_000; heldSince === undefined && Date.now() < deadline; )
      await sleep(50);
    expect(heldSince, 'the agents page was requested').toBeDefined();

    worker.child.kill('SIGTERM');
    let draining = await probe(`${base}/readyz`);
    for (const deadline = Date.now() + 10_000; draining.status === 200 && Date.now() < deadline; ) {
      await sleep(100);
      draining = await probe(`${base}/readyz`);
    }
    expect(draining.status).toBe(503);
    expect(draining.body).toMatch(/^not ready: workers /);
    // The activity is still in flight: its request is held. Let it through a moment later.
    await sleep(1000);
    expect(worker.child.exitCode).toBeNull();
    release();
    expect(await worker.exited, worker.stderr()).toBe(0);
    const agents = await db.query('SELECT count(*)::int AS n FROM support.agents');
    expect(agents.rows[0].n, 'the page in flight at SIGTERM was written').toBeGreaterThan(0);
    expect(worker.stderr()).not.toMatch(/cancel/i);

    // Nothing lost: another worker takes the run over and completes it.
    const next = spawnWorker(env);
    children.push(next.child);
    await next.ready;
    expect(await result).toBe('succeeded');
  });
});
