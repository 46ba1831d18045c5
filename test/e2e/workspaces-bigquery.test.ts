import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BigQuery } from '@google-cloud/bigquery';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkspaces, type WorkspacesHandle } from '../../companion/index.js';
import { emulatorClientOptions } from '../../connectors/bigquery/destination.js';
import type { Config } from '../../schemas/config.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig, workspaceConfigLoader } from '../../worker/config.js';
import { workspaceQuery } from '../../worker/run-sync.js';
import { pacingOf, type RunningWorkers, routeWorkspaces, startWorkers } from '../../worker/workers.js';
import type { WorkspaceRouter } from '../../worker/workspace-router.js';
import { type BigQueryQuotaProxy, startBigQueryQuotaProxy } from '../support/bigquery-quota-proxy.js';
import { inCampaign } from '../support/campaign.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';
import { expectBigQueryEqualsSource } from './bigquery-compare.js';
import { cli } from './cli.js';
import { DAY_MS, silentLogger, workflowBundle } from './harness.js';
import { COMPARED_TABLES } from './source-snapshot.js';
import { runWorkspace, workspaceSnapshot } from './workspace-runs.js';

/**
 * Where the exports' history starts: within one export window of the run's start (SYNC_WINDOW, 90 days),
 * so that each export pass is one window (each window costs the emulator its pages, flush and bookkeeping).
 */
const HISTORY_START = new Date(Date.now() - 89 * DAY_MS).toISOString();

/**
 * Every row of every table of a dataset (views aside), as JSON text, sorted, by table: what a write to the
 * dataset would change, bookkeeping and staging included. One query job for the whole dataset.
 */
async function datasetRows(bq: BigQuery, dataset: string, only?: readonly string[]) {
  const [tables] = await bq.dataset(dataset).getTables();
  const names = tables
    .filter((t) => t.metadata?.type !== 'VIEW' && (only === undefined || only.includes(t.id!)))
    .map((t) => t.id!)
    .sort();
  const [rows] = await bq.query(
    names
      .map((n) => `SELECT '${n}' AS t, TO_JSON_STRING(r) AS row FROM \`${dataset}\`.\`${n}\` AS r`)
      .join('\nUNION ALL\n'),
  );
  const out: Record<string, string[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (const r of rows as { t: string; row: string }[]) out[r.t]!.push(r.row);
  for (const n of names) out[n]!.sort();
  return out;
}

/**
 * issue 44 on BigQuery: two workspaces of one companion (the same ids and ticket numbers, different
 * tickets), synced by one worker into one project, a dataset each — one derived from the deployment's
 * dataset, one named by its entry — on the emulator, behind the quota proxy (BigQuery's per-table limits
 * and its location rule). The PostgreSQL counterpart: test/e2e/workspaces.test.ts.
 */
describe('many workspaces on BigQuery: each synced into its own dataset, equal to its own source', () => {
  let emulator: BigQueryEmulator;
  let proxy: BigQueryQuotaProxy;
  let bq: BigQuery;
  let fleet: WorkspacesHandle;
  let env: TestWorkflowEnvironment;
  let base: Config;
  let deps: Dependencies;
  let router: WorkspaceRouter;
  let workers: RunningWorkers;
  let taskQueue: string;
  const deployment = `ws_${randomBytes(4).toString('hex')}`;
  const northDataset = `${deployment}_north`;
  const southDataset = `south_${randomBytes(4).toString('hex')}`;

  const run = (workspace: string) => runWorkspace(env.client, taskQueue, base, workspace);
  const snapshotOf = (workspace: string) => workspaceSnapshot(fleet, workspace, HISTORY_START);

  beforeAll(async () => {
    const started = Promise.all([
      startBigQueryEmulator({ log: (l) => process.stderr.write(`[workspaces-bigquery] ${l}\n`) }),
      startWorkspaces({
        workspaces: [
          { id: 'home', seed: 5, tickets: 10, rateLimits: false },
          { id: 'north', seed: 1, tickets: 10, rateLimits: false },
          { id: 'south', seed: 2, tickets: 14, rateLimits: false },
        ],
      }),
      connectToTestServer(),
      workflowBundle(),
    ]);
    let bundle: Awaited<ReturnType<typeof workflowBundle>>;
    [emulator, fleet, env, bundle] = await started;
    proxy = await startBigQueryQuotaProxy(emulator.endpoint, { enforce: true });
    // Reads go to the emulator itself, which runs a job anywhere; the proxy keeps BigQuery's location rule.
    bq = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.endpoint) });
    // The deployment's dataset, created in the EU the way a team creates it, before any sync (through the
    // proxy, which so learns where it is); BIGQUERY_LOCATION is left unset, as its docs advise.
    await new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(proxy.endpoint) })
      .dataset(deployment)
      .create({ location: 'EU' });
    const folder = mkdtempSync(join(tmpdir(), 'workspaces-bigquery-'));
    const file = join(folder, 'workspaces.yaml');
    writeFileSync(join(folder, 'south.key'), `${fleet.workspace('south').keys.admin}\n`);
    writeFileSync(
      file,
      [
        'workspaces:',
        '  - id: north',
        `    url: ${fleet.baseUrl}`,
        '    key: { env: NORTH_API_KEY }',
        '  - id: south',
        `    url: ${fleet.baseUrl}`,
        '    key: { file: south.key }',
        `    schema: ${southDataset}`,
        '',
      ].join('\n'),
    );
    taskQueue = `workspaces-bq-${randomBytes(3).toString('hex')}`;
    base = loadConfig({ NORTH_API_KEY: fleet.workspace('north').keys.admin }, undefined, {
      SUPPORT_API_URL: fleet.baseUrl,
      SUPPORT_API_KEY: fleet.workspace('home').keys.admin,
      DESTINATION_URL: `bigquery://${emulator.projectId}/${deployment}`,
      BIGQUERY_API_ENDPOINT: proxy.endpoint,
      BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint,
      TEMPORAL_TASK_QUEUE: taskQueue,
      SYNC_WORKSPACES_FILE: file,
      SYNC_START_DATE: HISTORY_START,
      SYNC_THREAD_LOOKBACK: 'PT0S',
      SUPPORT_API_RATE_LIMITS: 'off',
      SYNC_AUDIT_SHARE: '0',
      LOG_LEVEL: 'silent',
    });
    deps = await buildDependencies(base, silentLogger);
    router = routeWorkspaces({
      connection: env.nativeConnection,
      namespace: 'default',
      config: base,
      deps,
      logger: silentLogger,
    });
    workers = await startWorkers({
      connection: env.nativeConnection,
      namespace: 'default',
      taskQueue,
      activities: router.activities(),
      ...pacingOf(base),
      workflowBundle: bundle,
      shutdownGraceTime: '5 seconds',
    });
  }, 600_000);
  afterAll(async () => {
    await workers?.shutdown();
    await router?.close();
    await deps?.close();
    await fleet?.stop();
    await proxy?.stop();
    await emulator?.stop();
    await env?.teardown();
  });

  it("a workspace's dataset is its own, in the deployment's project: derived from the deployment's, or its entry's", () => {
    const configOf = workspaceConfigLoader(base);
    expect(
      ['north', 'south'].map((w) => {
        const config = configOf(w);
        return [
          config.DESTINATION_URL.reveal(),
          config.BIGQUERY_API_ENDPOINT,
          config.BIGQUERY_STORAGE_ENDPOINT,
        ];
      }),
    ).toEqual([
      [`bigquery://${emulator.projectId}/${northDataset}`, proxy.endpoint, emulator.grpcEndpoint],
      [`bigquery://${emulator.projectId}/${southDataset}`, proxy.endpoint, emulator.grpcEndpoint],
    ]);
  });

  it('two workspaces with colliding ids and ticket numbers, at once: each dataset equals its own source', async () => {
    const [north, south] = await Promise.all([run('north'), run('south')]);
    for (const summary of [north, south]) {
      expect(summary.error).toBeUndefined();
      expect(summary.status).toBe('succeeded');
    }
    expect(proxy.report().violations).toEqual([]);
    await expectBigQueryEqualsSource(bq, northDataset, await snapshotOf('north'));
    await expectBigQueryEqualsSource(bq, southDataset, await snapshotOf('south'));
    // Each workspace's dataset was created where the deployment's is; the deployment's holds no table.
    const locations = await Promise.all(
      [deployment, northDataset, southDataset].map(
        async (d) => (await bq.dataset(d).getMetadata())[0].location,
      ),
    );
    expect(locations).toEqual(['EU', 'EU', 'EU']);
    expect((await bq.dataset(deployment).getTables())[0]).toEqual([]);
    // The ids collide: the same ticket id in two datasets, two different tickets.
    const tickets = async (dataset: string) => {
      const [rows] = await bq.query(
        `SELECT id, TO_JSON_STRING(_raw) AS raw FROM \`${dataset}\`.tickets WHERE _deleted_at IS NULL`,
      );
      return new Map((rows as { id: string; raw: string }[]).map((r) => [String(r.id), r.raw]));
    };
    const [northTickets, southTickets] = [await tickets(northDataset), await tickets(southDataset)];
    const shared = [...northTickets.keys()].filter((id) => southTickets.has(id));
    expect(shared.length).toBe(northTickets.size);
    expect(shared.filter((id) => northTickets.get(id) === southTickets.get(id))).toEqual([]);
    // Each run recorded in its own dataset's _sync_runs, and only there.
    const runsIn = async (dataset: string) =>
      ((await bq.query(`SELECT run_id FROM \`${dataset}\`._sync_runs`))[0] as { run_id: string }[]).map(
        (r) => r.run_id.split(':')[0],
      );
    expect([new Set(await runsIn(northDataset)), new Set(await runsIn(southDataset))]).toEqual([
      new Set([north.run_id]),
      new Set([south.run_id]),
    ]);
  });

  it("replaying one workspace's window, named by its id, touches no other workspace's rows", async () => {
    const windows: string[] = [];
    for await (const w of env.client.workflow.list({
      query: `${workspaceQuery('south')} AND SyncStream = 'agent_sessions' AND TaskQueue = '${taskQueue}'`,
    }))
      windows.push(w.workflowId);
    // A window of south's holding one of its sessions still open; the source ends it, the replay reads it.
    const world = fleet.workspace('south').world;
    const window = windows
      .map((id) => ({ id, parts: id.split('/') }))
      .find(({ parts }) =>
        world.sessions.some(
          (s) => s.end === null && s.start >= Date.parse(parts[2]!) && s.start < Date.parse(parts[3]!),
        ),
      );
    expect(window?.id).toMatch(/^south\/agent_sessions\//);
    const [, , from, before] = window!.parts;
    const open = world.sessions.find(
      (s) => s.end === null && s.start >= Date.parse(from!) && s.start < Date.parse(before!),
    )!;
    world.endSession(open.id);
    const north = await datasetRows(bq, northDataset);
    const result = await cli(['replay', window!.id, '--wait', '--no-local-worker'], {
      SUPPORT_API_URL: fleet.baseUrl,
      SUPPORT_API_KEY: fleet.workspace('home').keys.admin,
      DESTINATION_URL: base.DESTINATION_URL.reveal(),
      BIGQUERY_API_ENDPOINT: proxy.endpoint,
      BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint,
      SYNC_WORKSPACES_FILE: base.SYNC_WORKSPACES_FILE!,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      SUPPORT_API_RATE_LIMITS: 'off',
    });
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(JSON.parse(result.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      status: 'succeeded',
      workflow_id: window!.id,
    });
    expect(await datasetRows(bq, northDataset)).toEqual(north);
    expect((await bq.dataset(deployment).getTables())[0]).toEqual([]);
    const [ended] = await bq.query({
      query: `SELECT session_end FROM \`${southDataset}\`.agent_sessions WHERE id = @id`,
      params: { id: open.id },
    });
    expect((ended as { session_end: unknown }[]).map((r) => r.session_end !== null)).toEqual([true]);
    await expectBigQueryEqualsSource(bq, southDataset, await snapshotOf('south'));
    expect(proxy.report().violations).toEqual([]);
  });

  // The same on PostgreSQL runs in the suite (test/e2e/workspaces.test.ts); here, where it costs 15 s of the
  // BigQuery lane, in `npm run campaign` (test/support/campaign.ts).
  it.runIf(inCampaign())(
    "a revoked key fails its own workspace's run and no other's; each keeps its own rows",
    async () => {
      const north = await datasetRows(bq, northDataset, COMPARED_TABLES);
      // South changes, so its run has rows to write beside north's failing one.
      const southWorld = fleet.workspace('south').world;
      southWorld.createTicket({
        channel: 'email',
        subject: 'After the revocation',
        messages: [{ role: 'customer', text: 'Hello from south' }],
      });
      fleet.workspace('north').world.revokeKey('admin');
      const [northRun, southRun] = await Promise.all([run('north'), run('south')]);
      expect(northRun.status).toBe('failed');
      expect(northRun.error).toMatch(/401|INVALID_API_KEY/);
      expect(southRun.error).toBeUndefined();
      expect(southRun.status).toBe('succeeded');
      expect(await datasetRows(bq, northDataset, COMPARED_TABLES)).toEqual(north);
      await expectBigQueryEqualsSource(bq, southDataset, await snapshotOf('south'));
      expect(proxy.report().violations).toEqual([]);
    },
  );
});
