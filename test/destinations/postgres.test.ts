import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { Destination } from '../../connectors/destination.js';
import { createDestination } from '../../connectors/index.js';
import { PostgresDestination } from '../../connectors/postgres/destination.js';
import {
  canonicalTimestamp,
  type TableName,
  tableSpecOf,
  type WarehouseScope,
} from '../../schemas/warehouse.js';
import { freshDatabase } from '../support/postgres.js';
import { destinationConformance } from './conformance.js';
import { customFieldsSuite } from './custom-fields-suite.js';
import { input, ticket, writeBatch } from './fixtures.js';
import { historyViewsSuite } from './history-views-suite.js';
import { withNeighbour, withPrepare } from './neighbour.js';
import { viewsSuite } from './views-suite.js';

const SCHEMA = 'support_test';

/** The two workspaces of the shared-tables run: the suite's, and a neighbour that writes the same rows first. */
const ACME: WarehouseScope = { workspace: 'acme', layout: 'shared-tables' };
const ZETA: WarehouseScope = { workspace: 'zeta', layout: 'shared-tables' };

for (const scope of [null, ACME])
  destinationConformance(scope ? 'PostgreSQL, shared tables' : 'PostgreSQL', async () => {
    const url = await freshDatabase(scope ? 'destination_conformance_shared' : 'destination_conformance');
    // Timestamps as text, so the harness sees microseconds (pg's Date has milliseconds only).
    const asText = (oid: number, format?: 'text' | 'binary') =>
      oid === 1184 ? (v: string) => v : pg.types.getTypeParser(oid, format as 'text');
    const admin = new pg.Pool({ connectionString: url, max: 2, types: { getTypeParser: asText as never } });
    const pgTimestamp = (v: string) =>
      canonicalTimestamp(v.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'));
    const neighbours: Destination[] = [];
    return {
      create: async (options = {}) => {
        const dest = new PostgresDestination(url, {
          schema: SCHEMA,
          ...options,
          ...(scope ? { scope } : {}),
        });
        if (!scope) return dest;
        const { hooks: _hooks, ...unhooked } = options;
        const neighbour = new PostgresDestination(url, { schema: SCHEMA, ...unhooked, scope: ZETA });
        neighbours.push(neighbour);
        return withNeighbour(dest, neighbour);
      },
      async readRows(table: TableName) {
        const spec = tableSpecOf(table);
        const r = await admin.query(
          `SELECT * FROM "${SCHEMA}"."${table}"${scope ? ` WHERE workspace_id = '${scope.workspace}'` : ''} ORDER BY ${spec.primaryKey.map((k) => `"${k}"`).join(', ')}`,
        );
        return r.rows.map((row: Record<string, unknown>) => {
          const out: Record<string, unknown> = {};
          for (const [k, v] of Object.entries(row)) if (k !== 'workspace_id') out[k] = v;
          for (const c of spec.columns)
            if (c.type === 'timestamp' && typeof out[c.name] === 'string')
              out[c.name] = pgTimestamp(out[c.name] as string);
          // bigint columns come back as strings from pg
          for (const c of spec.columns)
            if (c.type === 'integer' && out[c.name] !== null) out[c.name] = Number(out[c.name]);
          return out;
        });
      },
      async columns(table: TableName) {
        const r = await admin.query(
          'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2',
          [SCHEMA, table],
        );
        return r.rows.map((x: { column_name: string }) => x.column_name);
      },
      async execute(sql: string) {
        await admin.query(sql);
      },
      async dropColumn(table: TableName, column: string) {
        // CASCADE: the BI views of this model depend on the column (an older model had neither); prepare()
        // re-creates them.
        await admin.query(`ALTER TABLE "${SCHEMA}"."${table}" DROP COLUMN "${column}" CASCADE`);
      },
      concurrency: 6,
      staged: false,
      longTextLength: 5_000_000,
      ...(scope ? { workspace: scope.workspace } : {}),
      async teardown() {
        try {
          if (scope) {
            // The neighbour wrote every batch the suite did and deleted nothing: none of its rows is deleted.
            const deleted = await admin.query(
              `SELECT table_name FROM information_schema.columns WHERE table_schema = $1 AND column_name = '_deleted_at'
               AND table_name IN (SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE')`,
              [SCHEMA],
            );
            const marked: string[] = [];
            for (const { table_name } of deleted.rows) {
              const n = await admin.query(
                `SELECT count(*)::int AS n FROM "${SCHEMA}"."${table_name}" WHERE workspace_id = 'zeta' AND _deleted_at IS NOT NULL`,
              );
              if (n.rows[0].n > 0) marked.push(`${table_name}: ${n.rows[0].n}`);
            }
            expect(marked).toEqual([]);
            const written = await admin.query(
              `SELECT count(*)::int AS n FROM "${SCHEMA}".tickets WHERE workspace_id = 'zeta'`,
            );
            expect(written.rows[0].n).toBeGreaterThan(10);
          }
        } finally {
          await Promise.all(neighbours.map((n) => n.close()));
          await admin.end();
        }
      },
    };
  });

describe('PostgreSQL destination specifics', () => {
  it('uses schema support by default, via createDestination, with the indexes BI needs', async () => {
    const url = await freshDatabase('destination_default_schema');
    const dest = await createDestination(url);
    expect(dest).toBeInstanceOf(PostgresDestination);
    await dest.prepare();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const idx = await client.query(
      "SELECT indexname FROM pg_indexes WHERE schemaname = 'support' AND tablename = 'tickets' ORDER BY 1",
    );
    await client.end();
    const names = idx.rows.map((r: { indexname: string }) => r.indexname);
    for (const i of [
      'tickets__created_at_idx',
      'tickets__updated_at_idx',
      'tickets__ticket_number_idx',
      'tickets__assignee_id_idx',
    ])
      expect(names).toContain(i);
    await dest.close();
  });

  it('never puts the password in an error message', async () => {
    const url = new URL(await freshDatabase('destination_secret'));
    url.password = 'sup3r-s3cret-pw';
    url.pathname = '/database_that_does_not_exist';
    const dest = await createDestination(url.toString());
    const err = (await dest.prepare().catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(Error);
    expect(`${err.message} ${err.stack}`).not.toContain('sup3r-s3cret-pw');
    await dest.close();
  });

  it('refuses to switch a populated schema between layouts, naming the table and the way out', async () => {
    const url = await freshDatabase('destination_layout_switch');
    const perWorkspace = new PostgresDestination(url, { schema: 'one' });
    await perWorkspace.prepare();
    const shared = new PostgresDestination(url, { schema: 'one', scope: ACME });
    await expect(shared.prepare()).rejects.toThrow(
      /one\.\S+ has no workspace_id column: it was created with SYNC_WAREHOUSE_LAYOUT=schema-per-workspace, and this deployment is set to shared-tables\..*set SYNC_WAREHOUSE_LAYOUT=schema-per-workspace, or sync into a new schema/,
    );
    const sharedTwo = new PostgresDestination(url, { schema: 'two', scope: ACME });
    await sharedTwo.prepare();
    const perWorkspaceTwo = new PostgresDestination(url, { schema: 'two' });
    await expect(perWorkspaceTwo.prepare()).rejects.toThrow(
      /two\.\S+ has a workspace_id column: it was created with SYNC_WAREHOUSE_LAYOUT=shared-tables/,
    );
    await Promise.all([perWorkspace, shared, sharedTwo, perWorkspaceTwo].map((d) => d.close()));
  });

  it('a connection keeps its staging table across commits; one a rolled-back write created is made again', async () => {
    const url = await freshDatabase('destination_staging_table');
    let now = new Date('2025-03-01T10:00:00.000Z');
    let crash = true;
    // One connection: every write stages on it, so a staging table it wrongly took to exist would fail.
    const dest = new PostgresDestination(url, {
      schema: SCHEMA,
      poolSize: 1,
      clock: () => now,
      hooks: {
        beforeMerge: () => {
          if (crash) throw new Error('injected crash after staging');
        },
      },
    });
    await dest.prepare();
    const a = ticket({ ticket_number: 1 });
    const b = ticket({ ticket_number: 2 });
    const batch = { table: 'tickets' as const, rows: [input(a), input(b)] };
    // The first write creates the staging table, then rolls back: the table goes with it.
    await expect(writeBatch(dest, batch)).rejects.toThrow(/injected crash/);
    crash = false;
    expect(await writeBatch(dest, batch)).toEqual({ received: 2, inserted: 2, updated: 0, unchanged: 0 });
    const syncedAt = async () =>
      (
        await dest.query<{ ticket_number: number; s: string }>(
          `SELECT ticket_number, to_char(_synced_at AT TIME ZONE 'UTC', 'HH24:MI') AS s FROM "${SCHEMA}".tickets ORDER BY 1`,
        )
      ).map((r) => [Number(r.ticket_number), r.s]);
    expect(await syncedAt()).toEqual([
      [1, '10:00'],
      [2, '10:00'],
    ]);
    // Received again unchanged: nothing rewritten, both stamped with the new write's time.
    now = new Date('2025-03-01T11:00:00.000Z');
    expect(await writeBatch(dest, batch)).toEqual({ received: 2, inserted: 0, updated: 0, unchanged: 2 });
    expect(await syncedAt()).toEqual([
      [1, '11:00'],
      [2, '11:00'],
    ]);
    // One changed, one not: the changed row is rewritten, the other stamped; each counted once.
    now = new Date('2025-03-01T12:00:00.000Z');
    const changed = { ...a, status: 'resolved' as const, updated_at: '2031-01-01T12:00:00.000Z' };
    const next = { table: 'tickets' as const, rows: [input(changed), input(b)] };
    expect(await writeBatch(dest, next)).toEqual({ received: 2, inserted: 0, updated: 1, unchanged: 1 });
    expect(await syncedAt()).toEqual([
      [1, '12:00'],
      [2, '12:00'],
    ]);
    const status = await dest.query<{ status: string }>(
      `SELECT status FROM "${SCHEMA}".tickets WHERE ticket_number = 1`,
    );
    expect(status[0]!.status).toBe('resolved');
    await dest.close();
  });

  it('rejects an unknown destination scheme with a clear message', async () => {
    await expect(createDestination('mysql://x')).rejects.toThrow(/postgres:\/\/.*bigquery:\/\//);
  });
});

/** A run of a workspace in the ledger: a shared-tables view holds the workspaces with a run. */
const ledgerRun = (workspace: string) => ({
  run_id: `run-${workspace}`,
  parent_run_id: null,
  workflow_id: `sync-run/${workspace}/run`,
  stream: null,
  window_start: null,
  window_end: null,
  mode: 'incremental' as const,
  status: 'succeeded' as const,
  started_at: '2025-03-01T00:00:00.000000Z',
  finished_at: '2025-03-01T00:01:00.000000Z',
  pages: 0,
  rows_written: 0,
  requests: 0,
  error: null,
});

/**
 * A destination on a fresh database of its own, and its views' columns (the BI view suites). With `scope`
 * (shared tables), the suite's workspace beside a neighbour that writes every batch first (withNeighbour),
 * both with a run in the ledger: every view must show the suite's workspace exactly what it shows a schema
 * of its own, `workspace_id` its first column.
 */
const viewsHarness =
  (
    database: string,
    settings: Record<string, string> = {},
    scope: WarehouseScope | null = null,
    neighbour = true,
  ) =>
  async () => {
    const url = await freshDatabase(database);
    const admin = new pg.Pool({ connectionString: url, max: 2 });
    for (const [name, value] of Object.entries(settings))
      await admin.query(`ALTER DATABASE ${new URL(url).pathname.slice(1)} SET ${name} = ${value}`);
    const neighbours: Destination[] = [];
    return {
      create: async (): Promise<Destination> => {
        if (!scope) return new PostgresDestination(url, { schema: SCHEMA });
        const dest = new PostgresDestination(url, { schema: SCHEMA, scope });
        const other = new PostgresDestination(url, { schema: SCHEMA, scope: ZETA });
        neighbours.push(other);
        const prepare = async () => {
          await dest.prepare();
          await dest.bookkeeping.recordRun(ledgerRun(scope.workspace));
          if (neighbour) await other.bookkeeping.recordRun(ledgerRun(ZETA.workspace));
        };
        return withPrepare(neighbour ? withNeighbour(dest, other) : dest, prepare);
      },
      async viewColumns(view: string) {
        const r = await admin.query(
          'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
          [SCHEMA, view],
        );
        const names = r.rows.map((x: { column_name: string }) => x.column_name);
        if (!scope || view === 'ticket_custom_field_labels') return names;
        expect(names[0], view).toBe('workspace_id');
        return names.slice(1);
      },
      async teardown() {
        await Promise.all(neighbours.map((n) => n.close()));
        await admin.end();
      },
    };
  };

viewsSuite('PostgreSQL', viewsHarness('destination_views'));
customFieldsSuite('PostgreSQL', viewsHarness('destination_custom_fields'));
// Where a database (or role) turns standard_conforming_strings off, a backslash escapes in '' strings: the
// source's keys and labels must reach the view's SQL and comments as the same text all the same.
customFieldsSuite(
  'PostgreSQL, standard_conforming_strings=off',
  viewsHarness('destination_custom_fields_nonstd', { standard_conforming_strings: 'off' }),
);
historyViewsSuite('PostgreSQL', viewsHarness('destination_history_views'));
viewsSuite('PostgreSQL, shared tables', viewsHarness('destination_views_shared', {}, ACME));
// Without a neighbour: the custom-field columns are the deployment's (a column's ticket count is every
// workspace's), which test/destinations/dbt-union.test.ts checks with two workspaces' fields.
customFieldsSuite(
  'PostgreSQL, shared tables',
  viewsHarness('destination_custom_fields_shared', {}, ACME, false),
);
historyViewsSuite('PostgreSQL, shared tables', viewsHarness('destination_history_views_shared', {}, ACME));
