import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshCustomFieldView } from '../../connectors/custom-field-view.js';
import { PostgresDestination } from '../../connectors/postgres/destination.js';
import { dbtEnvironment, provisionDbt } from '../../scripts/dbt.js';
import { DBT_DIR, DBT_RELATIONS, stagingModelName } from '../../scripts/dbt-sources.js';
import { freshDatabase } from '../support/postgres.js';
import { input, message, ticket, writeBatch } from './fixtures.js';

/**
 * The dbt package (dbt/) for real: two workspace schemas written through the PostgreSQL destination's own
 * path (prepare, writeTables, the custom-field views), their ids colliding as they do in the API; a data
 * team's project that adds the package (`dbt deps` of a local package); `dbt build` with
 * `support_sync_workspaces` set (the union, its per-workspace key tests), then `dbt run` with the one
 * schema of `support_sync_schema`. dbt from PyPI, pinned (scripts/dbt.ts; `npm run provision`).
 */

const execFileAsync = promisify(execFile);
const ACME = 'support_acme';
const GLOBEX = 'support_globex';
const WORKSPACES = { acme: ACME, 'globex-eu': GLOBEX };
/** The schema of the same two workspaces in shared tables. */
const SHARED = 'support_shared';
/** Ids both workspaces hold (the API's ids collide between workspaces). */
const T1 = '00000000-0000-4000-8000-0000000d0001';
const T2 = '00000000-0000-4000-8000-0000000d0002';
const T3 = '00000000-0000-4000-8000-0000000d0003';
const M1 = '00000000-0000-4000-8000-0000000d1001';
const M2 = '00000000-0000-4000-8000-0000000d1002';

let url: string;
let admin: pg.Pool;
let project: string;
let dbt: string;
let union: { stdout: string; ms: number };
let single: { stdout: string; ms: number };
let shared: { stdout: string; ms: number };

async function runDbt(args: string[], target?: string): Promise<{ stdout: string; ms: number }> {
  const started = Date.now();
  try {
    const { stdout } = await execFileAsync(
      dbt,
      [
        ...args,
        ...['--project-dir', project, '--profiles-dir', project],
        ...(target ? ['--target', target] : []),
      ],
      { cwd: project, env: dbtEnvironment(), maxBuffer: 16 * 1024 * 1024 },
    );
    return { stdout, ms: Date.now() - started };
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`dbt ${args[0]} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

const rows = async (sql: string) => (await admin.query(sql)).rows as Record<string, unknown>[];
const columnsOf = async (schema: string, relation: string) =>
  (
    await rows(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = '${schema}' AND table_name = '${relation}' ORDER BY ordinal_position`,
    )
  ).map((r) => r['column_name'] as string);
const count = async (from: string) => Number((await rows(`SELECT count(*) AS n FROM ${from}`))[0]!['n']);
const quoted = (names: readonly string[]) => names.map((n) => `"${n}"`).join(', ');

/** Ticket T1 of both workspaces in a dbt schema's tickets model: the colliding id twice, each its own content. */
async function expectCollidingApart(schema: string): Promise<void> {
  expect(
    await rows(
      `SELECT workspace_id, id, subject FROM ${schema}.stg_support_sync__tickets WHERE id = '${T1}' ORDER BY 1`,
    ),
  ).toEqual([
    { workspace_id: 'acme', id: T1, subject: 'acme one' },
    { workspace_id: 'globex-eu', id: T1, subject: 'globex one' },
  ]);
}

/** T1's custom fields in a dbt schema: every workspace's field columns, null where a workspace lacks one. */
async function expectCustomFieldsApart(schema: string): Promise<void> {
  expect(
    await rows(
      `SELECT workspace_id, region_text, acme_sku_text, seats_number FROM ${schema}.stg_support_sync__ticket_custom_fields WHERE ticket_id = '${T1}' ORDER BY 1`,
    ),
  ).toEqual([
    { workspace_id: 'acme', region_text: 'north', acme_sku_text: 'A-1', seats_number: null },
    { workspace_id: 'globex-eu', region_text: 'south', acme_sku_text: null, seats_number: 12 },
  ]);
}

/**
 * The two workspaces' rows, through each one's destination (prepared): its run in the ledger (a shared view
 * holds the workspaces with a run), tickets and messages, its custom-field views.
 */
async function populate(acme: PostgresDestination, globex: PostgresDestination): Promise<void> {
  const run = (run_id: string) => ({
    run_id,
    parent_run_id: null,
    workflow_id: `sync-run/${run_id}`,
    stream: null,
    window_start: null,
    window_end: null,
    mode: 'incremental' as const,
    status: 'succeeded' as const,
    started_at: '2026-01-01T00:00:00.000000Z',
    finished_at: '2026-01-01T00:01:00.000000Z',
    pages: 0,
    rows_written: 0,
    requests: 0,
    error: null,
  });
  await Promise.all([
    acme.bookkeeping.recordRun(run('r-acme')),
    globex.bookkeeping.recordRun(run('r-globex')),
  ]);
  // Same ticket and message ids in both, other content; a custom field of each workspace's own, one shared.
  await writeBatch(acme, {
    table: 'tickets',
    rows: [
      ticket({
        id: T1,
        ticket_number: 1,
        subject: 'acme one',
        ticket_fields: [
          { field_id: 'region', name: 'Region', value: 'north' },
          { field_id: 'acme_sku', name: 'SKU', value: 'A-1' },
        ],
      }),
      ticket({ id: T2, ticket_number: 2, subject: 'acme two', ticket_fields: null }),
    ].map(input),
  });
  await writeBatch(globex, {
    table: 'tickets',
    rows: [
      ticket({
        id: T1,
        ticket_number: 1,
        subject: 'globex one',
        ticket_fields: [
          { field_id: 'region', name: 'Region', value: 'south' },
          { field_id: 'seats', name: 'Seats', value: 12 },
        ],
      }),
      ticket({ id: T2, ticket_number: 2, subject: 'globex two' }),
      ticket({ id: T3, ticket_number: 3, subject: 'globex three' }),
    ].map(input),
  });
  await writeBatch(acme, {
    table: 'ticket_messages',
    rows: [message({ id: M1, ticket_id: T1, ticket_number: 1, text: 'acme hello' })].map(input),
  });
  await writeBatch(globex, {
    table: 'ticket_messages',
    rows: [
      message({ id: M1, ticket_id: T1, ticket_number: 1, text: 'globex hello' }),
      message({ id: M2, ticket_id: T3, ticket_number: 3, text: 'globex again' }),
    ].map(input),
  });
  await Promise.all([refreshCustomFieldView(acme), refreshCustomFieldView(globex)]);
}

beforeAll(async () => {
  [dbt, url] = await Promise.all([provisionDbt(), freshDatabase('dbt_union')]);
  admin = new pg.Pool({ connectionString: url, max: 2 });
  const acme = new PostgresDestination(url, { schema: ACME });
  const globex = new PostgresDestination(url, { schema: GLOBEX });
  await Promise.all([acme.prepare(), globex.prepare()]);
  await populate(acme, globex);
  await Promise.all([acme.close(), globex.close()]);
  // The same two workspaces in shared tables (SYNC_WAREHOUSE_LAYOUT=shared-tables): one schema.
  const sharedOf = (workspace: string) =>
    new PostgresDestination(url, { schema: SHARED, scope: { workspace, layout: 'shared-tables' } });
  const [sharedAcme, sharedGlobex] = [sharedOf('acme'), sharedOf('globex-eu')];
  await sharedAcme.prepare();
  await sharedGlobex.prepare();
  await populate(sharedAcme, sharedGlobex);
  await Promise.all([sharedAcme.close(), sharedGlobex.close()]);

  // A data team's project adding the package.
  project = await mkdtemp(join(tmpdir(), 'dbt-union-'));
  const db = new URL(url);
  const output = (schema: string) => ({
    type: 'postgres',
    host: db.hostname,
    port: Number(db.port),
    user: decodeURIComponent(db.username),
    password: decodeURIComponent(db.password),
    dbname: db.pathname.slice(1),
    schema,
    threads: 4,
  });
  await Promise.all([
    writeFile(
      join(project, 'dbt_project.yml'),
      'name: analytics\nversion: "1.0.0"\nconfig-version: 2\nprofile: analytics\n',
    ),
    writeFile(join(project, 'packages.yml'), `packages:\n  - local: ${JSON.stringify(DBT_DIR)}\n`),
    writeFile(
      join(project, 'profiles.yml'),
      JSON.stringify({
        analytics: {
          target: 'union',
          outputs: { union: output('dbt_union'), single: output('dbt_single'), shared: output('dbt_shared') },
        },
      }),
    ),
  ]);
  const deps = await runDbt(['deps']);
  // One after the other: at once, on two cores, they took as long in all (dbt's start-up is CPU).
  union = await runDbt(['build', '--vars', JSON.stringify({ support_sync_workspaces: WORKSPACES })], 'union');
  single = await runDbt(['run', '--vars', JSON.stringify({ support_sync_schema: ACME })], 'single');
  shared = await runDbt(['build', '--vars', JSON.stringify({ support_sync_schema: SHARED })], 'shared');
  process.stderr.write(
    `[dbt-union] dbt deps ${deps.ms} ms, dbt build (union) ${union.ms} ms, dbt run (one schema) ${single.ms} ms, dbt build (shared tables) ${shared.ms} ms\n`,
  );
}, 600_000);

afterAll(async () => {
  await admin?.end();
  if (project) await rm(project, { recursive: true, force: true });
});

describe('the dbt package over two workspace schemas', () => {
  it('builds every model and passes every test, the keys per workspace', () => {
    for (const r of DBT_RELATIONS) expect(union.stdout).toContain(`dbt_union.${stagingModelName(r)}`);
    expect(union.stdout).toMatch(/support_sync_unique_key_stg_support_sync__tickets_/);
    expect(union.stdout).toMatch(/Completed successfully/);
    expect(union.stdout).toMatch(/WARN=0 ERROR=0 SKIP=0/);
    // The package uses no syntax this dbt deprecates (tests' arguments under `arguments:`).
    for (const out of [union.stdout, single.stdout]) expect(out).not.toMatch(/deprecat/i);
  });

  it("the union holds each workspace's rows, none merged, workspace_id set", async () => {
    for (const r of DBT_RELATIONS) {
      const byWorkspace = Object.fromEntries(
        (
          await rows(
            `SELECT workspace_id, count(*) AS n FROM dbt_union.${stagingModelName(r)} GROUP BY workspace_id`,
          )
        ).map((x) => [x['workspace_id'], Number(x['n'])]),
      );
      const expected: Record<string, number> = {};
      for (const [id, schema] of Object.entries(WORKSPACES)) {
        const n = await count(`${schema}.${r}`);
        if (n > 0) expected[id] = n;
      }
      expect(byWorkspace, r).toEqual(expected);
    }
    // The colliding ids stay apart, each with its own workspace's content.
    await expectCollidingApart('dbt_union');
    // Joined on workspace_id too, each message finds its own ticket only.
    expect(
      await rows(`SELECT m.workspace_id, m.text, t.subject
        FROM dbt_union.stg_support_sync__ticket_messages m
        JOIN dbt_union.stg_support_sync__tickets t ON t.workspace_id = m.workspace_id AND t.id = m.ticket_id
        ORDER BY 1, 2`),
    ).toEqual([
      { workspace_id: 'acme', text: 'acme hello', subject: 'acme one' },
      { workspace_id: 'globex-eu', text: 'globex again', subject: 'globex three' },
      { workspace_id: 'globex-eu', text: 'globex hello', subject: 'globex one' },
    ]);
  });

  it('keeps the spec columns in order, then every custom-field column of any workspace, null where absent', async () => {
    const acme = await columnsOf(ACME, 'ticket_custom_fields');
    const globex = await columnsOf(GLOBEX, 'ticket_custom_fields');
    expect(acme).not.toEqual(globex);
    const fields = [...new Set([...acme, ...globex])].filter(
      (c) => c !== 'ticket_id' && c !== 'ticket_number',
    );
    expect(await columnsOf('dbt_union', 'stg_support_sync__ticket_custom_fields')).toEqual([
      'workspace_id',
      'ticket_id',
      'ticket_number',
      ...fields.sort(),
    ]);
    await expectCustomFieldsApart('dbt_union');
    // Every table's model: workspace_id, then the table's own columns in its order.
    expect(await columnsOf('dbt_union', 'stg_support_sync__tickets')).toEqual([
      'workspace_id',
      ...(await columnsOf(ACME, 'tickets')),
    ]);
  });

  it('with support_sync_schema only, every model is that schema, workspace default', async () => {
    for (const r of DBT_RELATIONS) {
      const model = `dbt_single.${stagingModelName(r)}`;
      const columns = quoted(await columnsOf(ACME, r));
      expect(await count(model), r).toBe(await count(`${ACME}.${r}`));
      expect(
        await count(`(SELECT ${columns} FROM ${model} EXCEPT ALL SELECT ${columns} FROM ${ACME}.${r}) d`),
        r,
      ).toBe(0);
      expect(
        await count(`(SELECT ${columns} FROM ${ACME}.${r} EXCEPT ALL SELECT ${columns} FROM ${model}) d`),
        r,
      ).toBe(0);
      expect(await count(`${model} WHERE workspace_id IS DISTINCT FROM 'default'`), r).toBe(0);
    }
  });

  it("over shared tables: every model is the schema's rows with their own workspace_id, as the union has them", async () => {
    expect(shared.stdout).toMatch(/WARN=0 ERROR=0 SKIP=0/);
    for (const r of DBT_RELATIONS) {
      const model = `dbt_shared.${stagingModelName(r)}`;
      const columns = quoted(await columnsOf(SHARED, r));
      expect(
        await count(`(SELECT ${columns} FROM ${model} EXCEPT ALL SELECT ${columns} FROM ${SHARED}.${r}) d`),
        r,
      ).toBe(0);
      expect(
        await count(`(SELECT ${columns} FROM ${SHARED}.${r} EXCEPT ALL SELECT ${columns} FROM ${model}) d`),
        r,
      ).toBe(0);
      // The label view lists the deployment's custom-field columns once (no workspace of its own).
      if (r === 'ticket_custom_field_labels') continue;
      const perWorkspace = async (schema: string) =>
        Object.fromEntries(
          (
            await rows(
              `SELECT workspace_id, count(*) AS n FROM ${schema}.${stagingModelName(r)} GROUP BY workspace_id`,
            )
          ).map((x) => [x['workspace_id'], Number(x['n'])]),
        );
      expect(await perWorkspace('dbt_shared'), r).toEqual(await perWorkspace('dbt_union'));
    }
    await expectCollidingApart('dbt_shared');
    // One custom-field view for both workspaces: every field's column, null where a workspace lacks it.
    await expectCustomFieldsApart('dbt_shared');
  });
});
