import { randomBytes } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkspaces, type WorkspacesHandle } from '../../companion/index.js';
import type { Config } from '../../schemas/config.js';
import { workspaceConfigLoader } from '../../worker/config.js';
import { workspaceQuery } from '../../worker/run-sync.js';
import { freshDatabase } from '../support/postgres.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';
import { cli } from './cli.js';
import { DAY_MS, workflowBundle } from './harness.js';
import { expectWarehouseEqualsSource, warehouseRows } from './warehouse-compare.js';
import {
  northSouthConfig,
  runWorkspace,
  startWorkspaceWorkers,
  workspaceSnapshot,
  writeNorthSouthFile,
} from './workspace-runs.js';

const EVERYTHING_SINCE = () => new Date(Date.now() - 500 * DAY_MS).toISOString();

/**
 * Two workspaces of one companion (the same ids and ticket numbers, different tickets), a third as the
 * deployment's own, synced by one worker into one PostgreSQL database: a schema each, or the deployment's
 * schema's tables shared (SYNC_WAREHOUSE_LAYOUT), each workspace's rows under its `workspace_id`.
 */
describe.each(['schema-per-workspace', 'shared-tables'] as const)(
  'many workspaces, one worker (%s): each equal to its own source',
  (layout) => {
    const shared = layout === 'shared-tables';
    /** Where a workspace's rows are: its schema, or its rows of the shared tables in `support`. */
    const storedAt = (workspace: string, schema: string) =>
      shared ? { schema: 'support', workspace } : schema;
    let fleet: WorkspacesHandle;
    let env: TestWorkflowEnvironment;
    let db: pg.Client;
    let base: Config;
    let fleetWorkers: Awaited<ReturnType<typeof startWorkspaceWorkers>> | undefined;
    let taskQueue: string;

    const run = (workspace: string) => runWorkspace(env.client, taskQueue, base, workspace);
    const snapshotOf = (workspace: string) => workspaceSnapshot(fleet, workspace, EVERYTHING_SINCE());

    beforeAll(async () => {
      fleet = await startWorkspaces({
        workspaces: [
          { id: 'home', seed: 5, tickets: 30, rateLimits: false },
          { id: 'north', seed: 1, tickets: 40, rateLimits: false },
          { id: 'south', seed: 2, tickets: 60, rateLimits: false },
        ],
      });
      const file = writeNorthSouthFile(fleet, [
        ...(shared ? [] : ['    schema: south_desk']),
        '    settings:',
        '      SYNC_PAGE_SIZE: 50',
      ]);
      const databaseUrl = await freshDatabase(shared ? 'e2e_workspaces_shared' : 'e2e_workspaces');
      env = await connectToTestServer();
      taskQueue = `workspaces-${randomBytes(3).toString('hex')}`;
      base = northSouthConfig(fleet, file, taskQueue, {
        DESTINATION_URL: databaseUrl,
        SYNC_START_DATE: new Date(Date.now() - 200 * DAY_MS).toISOString(),
        SYNC_METRICS_WORKSPACE_LABEL: 'true',
        SYNC_WAREHOUSE_LAYOUT: layout,
      });
      fleetWorkers = await startWorkspaceWorkers(env, base, await workflowBundle(), { metrics: true });
      db = new pg.Client({ connectionString: databaseUrl });
      await db.connect();
    });
    afterAll(async () => {
      await fleetWorkers?.close();
      await db?.end();
      await fleet?.stop();
      await env?.teardown();
    });

    it('a workspace entry is its own configuration: URL, key from a variable or a file, schema, settings', () => {
      const configOf = workspaceConfigLoader(base);
      const north = configOf('north');
      const south = configOf('south');
      expect([base.SYNC_WORKSPACE, north.SYNC_WORKSPACE, south.SYNC_WORKSPACE]).toEqual([
        'default',
        'north',
        'south',
      ]);
      expect([base.POSTGRES_SCHEMA, north.POSTGRES_SCHEMA, south.POSTGRES_SCHEMA]).toEqual(
        shared ? ['support', 'support', 'support'] : ['support', 'support_north', 'south_desk'],
      );
      expect(north.SUPPORT_API_KEY.reveal()).toBe(fleet.workspace('north').keys.admin);
      expect(south.SUPPORT_API_KEY.reveal()).toBe(fleet.workspace('south').keys.admin);
      expect([north.SYNC_PAGE_SIZE, south.SYNC_PAGE_SIZE]).toEqual([100, 50]);
      expect(() => configOf('west')).toThrow(
        /SYNC_WORKSPACE: "west" is not in .*its workspaces: north, south/,
      );
    });

    it('three workspaces with colliding ids and ticket numbers, at once: each equals its own source', async () => {
      const [home, north, south] = await Promise.all([run('default'), run('north'), run('south')]);
      for (const summary of [home, north, south]) {
        expect(summary.error).toBeUndefined();
        expect(summary.status).toBe('succeeded');
        // The run's tie-out compares its workspace's source with its own rows (in shared tables: the views).
        expect(summary.reconciliation).toMatchObject({ mismatch: 0 });
        expect(summary.reconciliation?.equal).toBeGreaterThan(0);
      }
      expect(north.workflow_id).toMatch(/^sync-run\/north\//);
      expect(home.workflow_id).not.toMatch(/^sync-run\/(north|south)\//);
      await expectWarehouseEqualsSource(db, await snapshotOf('home'), storedAt('default', 'support'));
      await expectWarehouseEqualsSource(db, await snapshotOf('north'), storedAt('north', 'support_north'));
      await expectWarehouseEqualsSource(db, await snapshotOf('south'), storedAt('south', 'south_desk'));
      // The ids collide: the same ticket id in two schemas (or twice in one table), two different tickets.
      const northTickets = await warehouseRows(db, 'tickets', storedAt('north', 'support_north'));
      const southTickets = await warehouseRows(db, 'tickets', storedAt('south', 'south_desk'));
      const colliding = [...northTickets.keys()].filter((id) => southTickets.has(id));
      expect(colliding.length).toBe(40);
      expect(
        colliding.filter(
          (id) => JSON.stringify(northTickets.get(id)) === JSON.stringify(southTickets.get(id)),
        ),
      ).toEqual([]);
      if (shared) {
        // The BI views are every workspace's, workspace_id first, each workspace's facts from its own rows.
        const homeTickets = await warehouseRows(db, 'tickets', storedAt('default', 'support'));
        const counts = async (view: string) =>
          Object.fromEntries(
            (
              await db.query<{ workspace_id: string; n: number }>(
                `SELECT workspace_id, count(*)::int AS n FROM support.${view} GROUP BY 1`,
              )
            ).rows.map((r) => [r.workspace_id, r.n]),
          );
        const expected = { default: homeTickets.size, north: northTickets.size, south: southTickets.size };
        expect(await counts('current_tickets')).toEqual(expected);
        expect(await counts('ticket_facts')).toEqual(expected);
        const first = await db.query<{ column_name: string }>(
          `SELECT column_name FROM information_schema.columns WHERE table_schema = 'support' AND table_name = 'ticket_facts' ORDER BY ordinal_position LIMIT 1`,
        );
        expect(first.rows[0]?.column_name).toBe('workspace_id');
        // A workspace's facts count its own messages: the messages of the same ticket id elsewhere are not its.
        const facts = await db.query<{ workspace_id: string; n: number }>(
          `SELECT workspace_id, sum(message_count)::int AS n FROM support.ticket_facts GROUP BY 1`,
        );
        const own = await db.query<{ workspace_id: string; n: number }>(
          `SELECT m.workspace_id, count(*)::int AS n FROM support.current_messages m
             JOIN support.current_tickets t ON t.workspace_id = m.workspace_id AND t.id = m.ticket_id GROUP BY 1`,
        );
        const byWorkspace = (rows: { workspace_id: string; n: number }[]) =>
          Object.fromEntries(rows.map((r) => [r.workspace_id, r.n]));
        expect(byWorkspace(facts.rows)).toEqual(byWorkspace(own.rows));
        // The bookkeeping is each workspace's own: its runs in the ledger.
        const ledger = await db.query<{ workspace_id: string }>(
          `SELECT DISTINCT workspace_id FROM support._sync_runs ORDER BY 1`,
        );
        expect(ledger.rows.map((r) => r.workspace_id)).toEqual(['default', 'north', 'south']);
      }
      // Every window of north's run is north's, found by its search attribute and named in its workspace (on
      // this file's task queue: other files share the dev server).
      const windows: string[] = [];
      const query = `${workspaceQuery('north')} AND TaskQueue = '${taskQueue}'`;
      for await (const w of env.client.workflow.list({ query })) windows.push(w.workflowId);
      expect(windows.length).toBeGreaterThan(3);
      expect(windows.filter((id) => !id.startsWith('north/') && !id.startsWith('sync-run/north/'))).toEqual(
        [],
      );
      // The worker's metrics count each workspace's rows under its own label (SYNC_METRICS_WORKSPACE_LABEL).
      const exposition = await fleetWorkers!.deps.metrics!.registry.metrics();
      const ticketRows = (workspace: string) =>
        Number(
          exposition.match(
            new RegExp(
              `^support_sync_rows_written_total\\{table="tickets",workspace="${workspace}"\\} (\\d+)$`,
              'm',
            ),
          )?.[1] ?? 0,
        );
      expect({ north: ticketRows('north'), south: ticketRows('south') }).toEqual({
        north: northTickets.size,
        south: southTickets.size,
      });
    });

    it("replaying one workspace's window, named by its id, touches no other workspace's rows", async () => {
      // Every table's row versions (xmin moves on any write of a row), bookkeeping included.
      const versions = async (workspace: string, schema: string) => {
        const at = shared ? 'support' : schema;
        const tables = await db.query<{ table_name: string }>(
          `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE' ORDER BY 1`,
          [at],
        );
        const out: Record<string, unknown[]> = {};
        for (const { table_name } of tables.rows)
          out[table_name] = (
            await db.query(
              `SELECT xmin::text AS v, ctid::text AS at FROM ${at}.${table_name}${shared ? ' WHERE workspace_id = $1' : ''} ORDER BY 2`,
              shared ? [workspace] : [],
            )
          ).rows;
        return out;
      };
      const others = {
        home: await versions('default', 'support'),
        north: await versions('north', 'support_north'),
      };
      expect(Object.keys(others.north)).toContain('_sync_runs');
      const windows: string[] = [];
      for await (const w of env.client.workflow.list({
        query: `${workspaceQuery('south')} AND SyncStream = 'agent_sessions' AND TaskQueue = '${taskQueue}'`,
      }))
        windows.push(w.workflowId);
      expect(windows[0]).toMatch(/^south\/agent_sessions\//);
      const result = await cli(['replay', windows[0]!, '--wait', '--no-local-worker'], {
        SUPPORT_API_URL: fleet.baseUrl,
        SUPPORT_API_KEY: fleet.workspace('home').keys.admin,
        DESTINATION_URL: base.DESTINATION_URL.reveal(),
        SYNC_WORKSPACES_FILE: base.SYNC_WORKSPACES_FILE!,
        TEMPORAL_ADDRESS: testTemporalAddress(),
        TEMPORAL_TASK_QUEUE: taskQueue,
        SUPPORT_API_RATE_LIMITS: 'off',
      });
      expect(result.code, result.stderr.slice(-2000)).toBe(0);
      expect(JSON.parse(result.stdout.trim().split('\n').at(-1)!)).toMatchObject({
        status: 'succeeded',
        workflow_id: windows[0],
      });
      expect({
        home: await versions('default', 'support'),
        north: await versions('north', 'support_north'),
      }).toEqual(others);
      await expectWarehouseEqualsSource(db, await snapshotOf('south'), storedAt('south', 'south_desk'));
    });

    it("a revoked key fails its own workspace's run and no other's; the other's rows stay its own", async () => {
      const before = await warehouseRows(db, 'tickets', storedAt('north', 'support_north'));
      fleet.workspace('north').world.revokeKey('admin');
      const [north, south] = await Promise.all([run('north'), run('south')]);
      expect(north.status).toBe('failed');
      expect(north.error).toMatch(/401|INVALID_API_KEY/);
      expect(south.error).toBeUndefined();
      expect(south.status).toBe('succeeded');
      expect(await warehouseRows(db, 'tickets', storedAt('north', 'support_north'))).toEqual(before);
      await expectWarehouseEqualsSource(db, await snapshotOf('south'), storedAt('south', 'south_desk'));
    });
  },
);
