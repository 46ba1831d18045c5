import { randomBytes } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkspaces, type WorkspacesHandle } from '../../companion/index.js';
import { emulatorClientOptions } from '../../connectors/bigquery/destination.js';
import type { Config } from '../../schemas/config.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { workspaceConfigLoader } from '../../worker/config.js';
import { workspaceQuery } from '../../worker/run-sync.js';
import { type BigQueryQuotaProxy, startBigQueryQuotaProxy } from '../support/bigquery-quota-proxy.js';
import { inCampaign } from '../support/campaign.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';
import { bigQueryRows, expectBigQueryEqualsSource, type StoredIn } from './bigquery-compare.js';
import { cli } from './cli.js';
import { DAY_MS, workflowBundle } from './harness.js';
import { COMPARED_TABLES } from './source-snapshot.js';
import {
  northSouthConfig,
  runWorkspace,
  startWorkspaceWorkers,
  workspaceSnapshot,
  writeNorthSouthFile,
} from './workspace-runs.js';

/**
 * Where the exports' history starts: within one export window of the run's start (SYNC_WINDOW, 90 days),
 * so that each export pass is one window (each window costs the emulator its pages, flush and bookkeeping).
 */
const HISTORY_START = new Date(Date.now() - 89 * DAY_MS).toISOString();

/**
 * Every row of every table of a dataset (views aside), as JSON text, sorted, by table: what a write to the
 * dataset would change, bookkeeping and staging included. One query job for the whole dataset. With a
 * workspace (shared tables): its rows of every table with a `workspace_id`, its own staging tables whole,
 * and no other workspace's staging.
 */
async function datasetRows(bq: BigQuery, at: StoredIn, only?: readonly string[]) {
  const { dataset, workspace } = typeof at === 'string' ? { dataset: at, workspace: null } : at;
  const [tables] = await bq.dataset(dataset).getTables();
  const names = tables
    .filter((t) => t.metadata?.type !== 'VIEW' && (only === undefined || only.includes(t.id!)))
    .map((t) => t.id!)
    .filter((n) => workspace === null || !/^_staging.*__/.test(n) || n.endsWith(`__${workspace}`))
    .sort();
  const scoped = new Set<string>();
  if (workspace !== null)
    for (const n of names) {
      const [meta] = await bq.dataset(dataset).table(n).getMetadata();
      if ((meta.schema.fields as { name: string }[]).some((f) => f.name === 'workspace_id')) scoped.add(n);
    }
  const [rows] = await bq.query(
    names
      .map(
        (n) =>
          `SELECT '${n}' AS t, TO_JSON_STRING(r) AS row FROM \`${dataset}\`.\`${n}\` AS r${scoped.has(n) ? ` WHERE r.workspace_id = '${workspace}'` : ''}`,
      )
      .join('\nUNION ALL\n'),
  );
  const out: Record<string, string[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (const r of rows as { t: string; row: string }[]) out[r.t]!.push(r.row);
  for (const n of names) out[n]!.sort();
  return out;
}

/**
 * issue 44 on BigQuery: two workspaces of one companion (the same ids and ticket numbers, different
 * tickets), synced by one worker into one project — a dataset each (one derived from the deployment's
 * dataset, one named by its entry), or the deployment's dataset's tables shared (SYNC_WAREHOUSE_LAYOUT),
 * each workspace's rows under its `workspace_id` — on the emulator, behind the quota proxy (BigQuery's
 * per-table limits and its location rule). The PostgreSQL counterpart: test/e2e/workspaces.test.ts.
 */
describe.each(['schema-per-workspace', 'shared-tables'] as const)(
  'many workspaces on BigQuery (%s): each equal to its own source',
  (layout) => {
    const shared = layout === 'shared-tables';
    let emulator: BigQueryEmulator;
    let proxy: BigQueryQuotaProxy;
    let bq: BigQuery;
    let fleet: WorkspacesHandle;
    let env: TestWorkflowEnvironment;
    let base: Config;
    let fleetWorkers: Awaited<ReturnType<typeof startWorkspaceWorkers>> | undefined;
    let taskQueue: string;
    const deployment = `ws_${randomBytes(4).toString('hex')}`;
    const northDataset = shared ? deployment : `${deployment}_north`;
    const southDataset = shared ? deployment : `south_${randomBytes(4).toString('hex')}`;
    /** Where a workspace's rows are: its dataset, or its rows of the shared tables of the deployment's. */
    const storedIn = (workspace: string, dataset: string): StoredIn =>
      shared ? { dataset: deployment, workspace } : dataset;
    const north = () => storedIn('north', northDataset);
    const south = () => storedIn('south', southDataset);

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
      const file = writeNorthSouthFile(fleet, shared ? [] : [`    schema: ${southDataset}`]);
      taskQueue = `workspaces-bq-${randomBytes(3).toString('hex')}`;
      base = northSouthConfig(fleet, file, taskQueue, {
        DESTINATION_URL: `bigquery://${emulator.projectId}/${deployment}`,
        BIGQUERY_API_ENDPOINT: proxy.endpoint,
        BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint,
        SYNC_START_DATE: HISTORY_START,
        SYNC_WAREHOUSE_LAYOUT: layout,
      });
      fleetWorkers = await startWorkspaceWorkers(env, base, bundle);
    }, 600_000);
    afterAll(async () => {
      await fleetWorkers?.close();
      await fleet?.stop();
      await proxy?.stop();
      await emulator?.stop();
      await env?.teardown();
    });

    it("a workspace's dataset: its own in the deployment's project (derived, or its entry's), or the deployment's shared tables", () => {
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

    // Two first syncs at once on the emulator: minutes on a loaded 2-core machine (273 s seen), past the
    // integration project's 300 s.
    it('two workspaces with colliding ids and ticket numbers, at once: each equals its own source', async () => {
      const [northRun, southRun] = await Promise.all([run('north'), run('south')]);
      for (const summary of [northRun, southRun]) {
        expect(summary.error).toBeUndefined();
        expect(summary.status).toBe('succeeded');
        // The run's tie-out compares its workspace's source with its own rows (in shared tables: the views).
        expect(summary.reconciliation).toMatchObject({ mismatch: 0 });
        expect(summary.reconciliation?.equal).toBeGreaterThan(0);
      }
      expect(proxy.report().violations).toEqual([]);
      await expectBigQueryEqualsSource(bq, north(), await snapshotOf('north'));
      await expectBigQueryEqualsSource(bq, south(), await snapshotOf('south'));
      // Each workspace's dataset was created where the deployment's is; the deployment's holds no table (in
      // shared tables: every table, and no other dataset was made).
      if (shared) {
        const [datasets] = await bq.getDatasets();
        expect(datasets.map((d) => d.id).filter((id) => id?.startsWith(deployment))).toEqual([deployment]);
      } else {
        const locations = await Promise.all(
          [deployment, northDataset, southDataset].map(
            async (d) => (await bq.dataset(d).getMetadata())[0].location,
          ),
        );
        expect(locations).toEqual(['EU', 'EU', 'EU']);
        expect((await bq.dataset(deployment).getTables())[0]).toEqual([]);
      }
      // The ids collide: the same ticket id in two datasets (or twice in one table), two different tickets.
      const [northTickets, southTickets] = [
        await bigQueryRows(bq, north(), 'tickets'),
        await bigQueryRows(bq, south(), 'tickets'),
      ];
      const colliding = [...northTickets.keys()].filter((id) => southTickets.has(id));
      expect(colliding.length).toBe(northTickets.size);
      expect(
        colliding.filter(
          (id) => JSON.stringify(northTickets.get(id)) === JSON.stringify(southTickets.get(id)),
        ),
      ).toEqual([]);
      // Each run recorded in its own workspace's _sync_runs, and only there.
      const runsOf = async (at: StoredIn) => {
        const { dataset, workspace } = typeof at === 'string' ? { dataset: at, workspace: null } : at;
        const [rows] = await bq.query({
          query: `SELECT run_id FROM \`${dataset}\`._sync_runs${workspace === null ? '' : ' WHERE workspace_id = @workspace'}`,
          params: workspace === null ? {} : { workspace },
        });
        return new Set((rows as { run_id: string }[]).map((r) => r.run_id.split(':')[0]));
      };
      expect([await runsOf(north()), await runsOf(south())]).toEqual([
        new Set([northRun.run_id]),
        new Set([southRun.run_id]),
      ]);
      if (shared) {
        // The BI views are every workspace's, workspace_id first, each workspace's facts from its own rows.
        const counts = async (view: string) => {
          const [rows] = await bq.query(
            `SELECT workspace_id, COUNT(*) AS n FROM \`${deployment}\`.${view} GROUP BY 1`,
          );
          return Object.fromEntries(
            (rows as { workspace_id: string; n: number }[]).map((r) => [r.workspace_id, Number(r.n)]),
          );
        };
        const expected = { north: northTickets.size, south: southTickets.size };
        expect(await counts('current_tickets')).toEqual(expected);
        expect(await counts('ticket_facts')).toEqual(expected);
        const [facts] = await bq.query(
          `SELECT workspace_id, SUM(message_count) AS n FROM \`${deployment}\`.ticket_facts GROUP BY 1`,
        );
        const [own] = await bq.query(
          `SELECT m.workspace_id, COUNT(*) AS n FROM \`${deployment}\`.current_messages m
           JOIN \`${deployment}\`.current_tickets t ON t.workspace_id = m.workspace_id AND t.id = m.ticket_id
         GROUP BY 1`,
        );
        const byWorkspace = (rows: unknown[]) =>
          Object.fromEntries(
            (rows as { workspace_id: string; n: number }[]).map((r) => [r.workspace_id, Number(r.n)]),
          );
        expect(byWorkspace(facts)).toEqual(byWorkspace(own));
        // Messages of the same ticket id in the other workspace are not a workspace's: the counts differ.
        expect(Object.keys(byWorkspace(own)).sort()).toEqual(['north', 'south']);
        const [view] = await bq.dataset(deployment).table('ticket_facts').getMetadata();
        expect((view.schema.fields as { name: string }[])[0]?.name).toBe('workspace_id');
        // Each workspace staged into its own staging tables.
        const [tables] = await bq.dataset(deployment).getTables();
        const staging = tables.map((t) => t.id!).filter((n) => n.startsWith('_staging'));
        expect(staging).toContain('_staging__north');
        expect(staging).toContain('_staging__south');
        expect(staging).not.toContain('_staging');
      }
    }, 900_000);

    it("replaying one workspace's window, named by its id, touches no other workspace's rows", async () => {
      const windows: string[] = [];
      for await (const w of env.client.workflow.list({
        query: `${workspaceQuery('south')} AND SyncStream = 'agent_sessions' AND TaskQueue = '${taskQueue}'`,
      }))
        windows.push(w.workflowId);
      // A window of south's holding one of its sessions the warehouse has open; the source ends it, the
      // replay reads it. (Not any session open in the source: which of those a first sync stores depends on
      // the hour the world was generated at.)
      const world = fleet.workspace('south').world;
      const [openRows] = await bq.query({
        query: `SELECT id FROM \`${southDataset}\`.agent_sessions WHERE session_end IS NULL${shared ? " AND workspace_id = 'south'" : ''}`,
      });
      const storedOpen = new Set((openRows as { id: string }[]).map((r) => r.id));
      const openIn = (from: string, before: string) =>
        world.sessions.find(
          (s) =>
            s.end === null &&
            storedOpen.has(s.id) &&
            s.start >= Date.parse(from) &&
            s.start < Date.parse(before),
        );
      const window = windows
        .map((id) => ({ id, parts: id.split('/') }))
        .find(({ parts }) => openIn(parts[2]!, parts[3]!) !== undefined);
      expect(window?.id).toMatch(/^south\/agent_sessions\//);
      const [, , from, before] = window!.parts;
      const open = openIn(from!, before!)!;
      world.endSession(open.id);
      const northBefore = await datasetRows(bq, north());
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
      expect(await datasetRows(bq, north())).toEqual(northBefore);
      if (!shared) expect((await bq.dataset(deployment).getTables())[0]).toEqual([]);
      const [ended] = await bq.query({
        query: `SELECT session_end FROM \`${southDataset}\`.agent_sessions WHERE id = @id${shared ? " AND workspace_id = 'south'" : ''}`,
        params: { id: open.id },
      });
      expect((ended as { session_end: unknown }[]).map((r) => r.session_end !== null)).toEqual([true]);
      await expectBigQueryEqualsSource(bq, south(), await snapshotOf('south'));
      expect(proxy.report().violations).toEqual([]);
    });

    // The same on PostgreSQL runs in the suite (test/e2e/workspaces.test.ts); here, where it costs 15 s of the
    // BigQuery lane, in shared tables (where one workspace's failure and the other's writes meet in one
    // table) and, with a dataset each, in `npm run campaign` (test/support/campaign.ts).
    it.runIf(shared || inCampaign())(
      "a revoked key fails its own workspace's run and no other's; each keeps its own rows",
      async () => {
        const northBefore = await datasetRows(bq, north(), COMPARED_TABLES);
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
        expect(await datasetRows(bq, north(), COMPARED_TABLES)).toEqual(northBefore);
        await expectBigQueryEqualsSource(bq, south(), await snapshotOf('south'));
        expect(proxy.report().violations).toEqual([]);
      },
    );
  },
);
