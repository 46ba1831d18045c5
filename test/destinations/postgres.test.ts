import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createDestination } from '../../connectors/index.js';
import { PostgresDestination } from '../../connectors/postgres/destination.js';
import { canonicalTimestamp, type TableName, tableSpecOf } from '../../schemas/warehouse.js';
import { freshDatabase } from '../support/postgres.js';
import { destinationConformance } from './conformance.js';
import { customFieldsSuite } from './custom-fields-suite.js';
import { historyViewsSuite } from './history-views-suite.js';
import { viewsSuite } from './views-suite.js';

const SCHEMA = 'support_test';

destinationConformance('PostgreSQL', async () => {
  const url = await freshDatabase('destination_conformance');
  // Timestamps as text, so the harness sees microseconds (pg's Date has milliseconds only).
  const asText = (oid: number, format?: 'text' | 'binary') =>
    oid === 1184 ? (v: string) => v : pg.types.getTypeParser(oid, format as 'text');
  const admin = new pg.Pool({ connectionString: url, max: 2, types: { getTypeParser: asText as never } });
  const pgTimestamp = (v: string) => canonicalTimestamp(v.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00'));
  return {
    create: async (options = {}) => new PostgresDestination(url, { schema: SCHEMA, ...options }),
    async readRows(table: TableName) {
      const spec = tableSpecOf(table);
      const r = await admin.query(
        `SELECT * FROM "${SCHEMA}"."${table}" ORDER BY ${spec.primaryKey.map((k) => `"${k}"`).join(', ')}`,
      );
      return r.rows.map((row: Record<string, unknown>) => {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(row)) out[k] = v;
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
    teardown: () => admin.end(),
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

  it('rejects an unknown destination scheme with a clear message', async () => {
    await expect(createDestination('mysql://x')).rejects.toThrow(/postgres:\/\/.*bigquery:\/\//);
  });
});

/** A destination on a fresh database of its own, and its views' columns (the BI view suites). */
const viewsHarness =
  (database: string, settings: Record<string, string> = {}) =>
  async () => {
    const url = await freshDatabase(database);
    const admin = new pg.Pool({ connectionString: url, max: 2 });
    for (const [name, value] of Object.entries(settings))
      await admin.query(`ALTER DATABASE ${new URL(url).pathname.slice(1)} SET ${name} = ${value}`);
    return {
      create: async () => new PostgresDestination(url, { schema: SCHEMA }),
      async viewColumns(view: string) {
        const r = await admin.query(
          'SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position',
          [SCHEMA, view],
        );
        return r.rows.map((x: { column_name: string }) => x.column_name);
      },
      teardown: () => admin.end(),
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
