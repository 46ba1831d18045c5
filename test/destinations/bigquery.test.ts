import { randomBytes } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BigQueryDestination,
  type BigQueryDestinationOptions,
  emulatorClientOptions,
} from '../../connectors/bigquery/destination.js';
import { parseBigQueryUrl } from '../../connectors/bigquery/url.js';
import type { Destination } from '../../connectors/destination.js';
import { createDestination } from '../../connectors/index.js';
import { freePort } from '../../embedded/free-port.js';
import {
  canonicalTimestamp,
  TABLES,
  type TableName,
  tableSpecOf,
  type WarehouseScope,
} from '../../schemas/warehouse.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { sized } from '../support/campaign.js';
import { destinationConformance } from './conformance.js';
import { customFieldsSuite } from './custom-fields-suite.js';
import { historyViewsSuite } from './history-views-suite.js';
import { withNeighbour, withPrepare } from './neighbour.js';
import { viewsSuite } from './views-suite.js';

let emulator: BigQueryEmulator;
beforeAll(async () => {
  emulator = await startBigQueryEmulator({ log: (l) => process.stderr.write(`[bigquery-test] ${l}\n`) });
}, 600_000);
afterAll(async () => {
  await emulator?.stop();
});

/** The two workspaces of the shared-tables run: the suite's, and a neighbour that writes the same rows first. */
const ACME: WarehouseScope = { workspace: 'acme', layout: 'shared-tables' };
const ZETA: WarehouseScope = { workspace: 'zeta', layout: 'shared-tables' };

/**
 * Shared tables on BigQuery: the conformance and view suites again, beside a neighbour, in `npm run campaign`
 * (test/support/campaign.ts). They double this file, the BigQuery lane's longest; `npm test` keeps shared
 * tables on BigQuery by test/e2e/workspaces-bigquery.test.ts and every suite in shared tables on PostgreSQL.
 */
const SHARED_TABLES: WarehouseScope[] = sized([], [ACME]);

for (const scope of [null, ...SHARED_TABLES])
  destinationConformance(
    scope ? 'BigQuery (bqemulator), shared tables' : 'BigQuery (bqemulator)',
    async () => {
      const datasetId = `conformance_${randomBytes(4).toString('hex')}`;
      const client = new BigQuery({
        projectId: emulator.projectId,
        ...emulatorClientOptions(emulator.endpoint),
      });
      const neighbours: Destination[] = [];
      const create = async (options: Partial<BigQueryDestinationOptions> = {}) => {
        const dest = new BigQueryDestination({
          projectId: emulator.projectId,
          datasetId,
          apiEndpoint: emulator.endpoint,
          storageEndpoint: emulator.grpcEndpoint,
          ...options,
          ...(scope ? { scope } : {}),
        });
        if (!scope) return dest;
        const { hooks: _hooks, ...unhooked } = options;
        const neighbour = new BigQueryDestination({
          projectId: emulator.projectId,
          datasetId,
          apiEndpoint: emulator.endpoint,
          storageEndpoint: emulator.grpcEndpoint,
          ...unhooked,
          scope: ZETA,
        });
        neighbours.push(neighbour);
        // The neighbour prepares its own staging tables when the suite prepares (else its every append fails,
        // quietly: a mirrored call's failure is the suite's to see), and its staged pages are merged when the
        // suite's are (its own flush, of its own staging).
        return withNeighbour(dest, neighbour, ['prepare', 'writeTables', 'flushStaged']);
      };
      return {
        create,
        async readRows(table: TableName) {
          const spec = tableSpecOf(table);
          const [rows] = await client.query(
            `SELECT * FROM \`${datasetId}\`.\`${table}\`${scope ? ` WHERE workspace_id = '${scope.workspace}'` : ''} ORDER BY ${spec.primaryKey.map((k) => `\`${k}\``).join(', ')}`,
          );
          return (rows as Record<string, unknown>[]).map((row) => {
            const out: Record<string, unknown> = {};
            for (const c of spec.columns) {
              const v = row[c.name] ?? null;
              if (v === null) out[c.name] = null;
              else if (c.type === 'timestamp')
                out[c.name] = canonicalTimestamp(String((v as { value: string }).value ?? v));
              else if (c.type === 'json') out[c.name] = typeof v === 'string' ? JSON.parse(v) : v;
              else out[c.name] = v;
            }
            return out;
          });
        },
        async columns(table: TableName) {
          const [meta] = await client.dataset(datasetId).table(table).getMetadata();
          return (meta.schema.fields as { name: string }[]).map((f) => f.name);
        },
        async execute(sql: string) {
          await client.query(sql);
        },
        async dropColumn(table: TableName, column: string) {
          // tables.patch cannot drop a column: rebuild the table without it (as an older model version would have it).
          const t = client.dataset(datasetId).table(table);
          const [meta] = await t.getMetadata();
          const [rows] = await client.query(
            `SELECT * EXCEPT (\`${column}\`) FROM \`${datasetId}\`.\`${table}\``,
          );
          await t.delete();
          await client.dataset(datasetId).createTable(table, {
            schema: { fields: (meta.schema.fields as { name: string }[]).filter((f) => f.name !== column) },
          });
          if ((rows as unknown[]).length > 0) {
            const cols = Object.keys((rows as Record<string, unknown>[])[0]!);
            const spec = tableSpecOf(table);
            // A shared table's workspace_id is no column of the spec: a string.
            const typeOf = (c: string) => spec.columns.find((x) => x.name === c)?.type ?? 'string';
            const sel = cols.map((c) => {
              const type = typeOf(c);
              return type === 'json' ? `PARSE_JSON(${c})` : type === 'timestamp' ? `TIMESTAMP(${c})` : c;
            });
            const values = (rows as Record<string, unknown>[]).map((r) => ({
              ...Object.fromEntries(
                cols.map((c) => {
                  const v = r[c];
                  return [
                    c,
                    v !== null && typeof v === 'object' && 'value' in v ? (v as { value: string }).value : v,
                  ];
                }),
              ),
            }));
            // Re-insert through a query (DML), typed from the spec.
            for (const v of values) {
              const params = Object.fromEntries(cols.map((c) => [c, v[c] ?? null]));
              const types = Object.fromEntries(
                cols.map((c) => [
                  c,
                  typeOf(c) === 'integer'
                    ? 'INT64'
                    : typeOf(c) === 'float'
                      ? 'FLOAT64'
                      : typeOf(c) === 'boolean'
                        ? 'BOOL'
                        : 'STRING',
                ]),
              );
              await client.query({
                query: `INSERT INTO \`${datasetId}\`.\`${table}\` (${cols.join(', ')}) SELECT ${sel.map((s, i) => s.replace(cols[i]!, `@${cols[i]}`)).join(', ')}`,
                params,
                types,
              });
            }
          }
        },
        concurrency: 3,
        staged: true,
        longTextLength: 2_000_000,
        ...(scope ? { workspace: scope.workspace } : {}),
        teardown: async () => {
          try {
            if (scope) {
              // The neighbour wrote every batch the suite did and deleted nothing: none of its rows is deleted.
              const [tables] = await client.dataset(datasetId).getTables();
              const marked: string[] = [];
              for (const t of tables) {
                if (t.metadata?.type === 'VIEW') continue;
                const [meta] = await t.getMetadata();
                const names = (meta.schema?.fields ?? []).map((f: { name: string }) => f.name);
                if (!names.includes('_deleted_at') || !names.includes('workspace_id')) continue;
                const [rows] = await client.query(
                  `SELECT COUNT(*) AS n FROM \`${datasetId}\`.\`${t.id}\` WHERE workspace_id = 'zeta' AND _deleted_at IS NOT NULL`,
                );
                const n = Number((rows as { n: number }[])[0]!.n);
                if (n > 0) marked.push(`${t.id}: ${n}`);
              }
              expect(marked).toEqual([]);
              const [written] = await client.query(
                `SELECT COUNT(*) AS n FROM \`${datasetId}\`.tickets WHERE workspace_id = 'zeta'`,
              );
              expect(Number((written as { n: number }[])[0]!.n)).toBeGreaterThan(10);
            }
          } finally {
            await Promise.all(neighbours.map((n) => n.close()));
            await client
              .dataset(datasetId)
              .delete({ force: true })
              .catch(() => undefined);
          }
        },
      };
    },
  );

describe('BigQuery destination specifics', () => {
  it('the write probe: a Storage Write endpoint out of reach fails in seconds, naming it; a reachable one passes', async () => {
    const datasetId = `probe_${randomBytes(4).toString('hex')}`;
    const options = { projectId: emulator.projectId, datasetId, apiEndpoint: emulator.endpoint };
    const good = new BigQueryDestination({ ...options, storageEndpoint: emulator.grpcEndpoint });
    expect(await good.probeWrite()).toBe('not_prepared'); // no tables yet: nothing to write to
    await good.prepare();
    expect(await good.probeWrite()).toBe('probed');
    await good.close();
    // The REST side answers (prepare, reads); the Storage Write API's port is closed.
    const closed = `127.0.0.1:${await freePort()}`;
    const cut = new BigQueryDestination({ ...options, storageEndpoint: closed });
    await cut.prepare();
    await cut.currentTime();
    const started = Date.now();
    const err = (await cut.probeWrite().catch((e: unknown) => e)) as Error;
    const ms = Date.now() - started;
    process.stderr.write(
      `[bigquery-test] write probe against a closed Storage Write port failed in ${ms} ms: ${err.message}\n`,
    );
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain(
      `the BigQuery Storage Write API (${closed}) does not take an append to ${datasetId}._staging_merged`,
    );
    expect(err.message).not.toContain('\n');
    expect(ms).toBeLessThan(20_000);
    await cut.close();
  }, 120_000);

  it('parses bigquery://project/dataset and builds through createDestination', async () => {
    expect(parseBigQueryUrl('bigquery://my-proj/analytics')).toEqual({
      projectId: 'my-proj',
      datasetId: 'analytics',
    });
    expect(() => parseBigQueryUrl('bigquery://only-project')).toThrow(/bigquery:\/\/<project>\/<dataset>/);
    const dest = await createDestination(
      `bigquery://${emulator.projectId}/factory_${randomBytes(3).toString('hex')}`,
      {
        apiEndpoint: emulator.endpoint,
        storageEndpoint: emulator.grpcEndpoint,
      },
    );
    expect(dest).toBeInstanceOf(BigQueryDestination);
    await dest.prepare();
    await dest.close();
  });

  it('creates tables with time partitioning and clustering per table', async () => {
    const datasetId = `layout_${randomBytes(3).toString('hex')}`;
    const dest = new BigQueryDestination({
      projectId: emulator.projectId,
      datasetId,
      apiEndpoint: emulator.endpoint,
      storageEndpoint: emulator.grpcEndpoint,
    });
    await dest.prepare();
    const client = new BigQuery({
      projectId: emulator.projectId,
      ...emulatorClientOptions(emulator.endpoint),
    });
    const [meta] = await client.dataset(datasetId).table('tickets').getMetadata();
    expect(meta.timePartitioning).toMatchObject({ type: 'DAY', field: 'created_at' });
    expect(meta.clustering.fields).toEqual([...TABLES.tickets.clusterBy]);
  });
});

/**
 * A destination on a dataset of its own, and its views' columns (the BI view suites). With `scope` (shared
 * tables), the suite's workspace beside a neighbour that writes every batch first (withNeighbour) and
 * prepares first (so the views union both): every view must show the suite's workspace exactly what it
 * shows a dataset of its own, `workspace_id` its first column.
 */
const viewsHarness =
  (prefix: string, scope: WarehouseScope | null = null, neighbour = true) =>
  async () => {
    const datasetId = `${prefix}_${randomBytes(4).toString('hex')}`;
    const client = new BigQuery({
      projectId: emulator.projectId,
      ...emulatorClientOptions(emulator.endpoint),
    });
    const neighbours: Destination[] = [];
    const destination = (workspace: WarehouseScope | null) =>
      new BigQueryDestination({
        projectId: emulator.projectId,
        datasetId,
        apiEndpoint: emulator.endpoint,
        storageEndpoint: emulator.grpcEndpoint,
        ...(workspace ? { scope: workspace } : {}),
      });
    return {
      create: async (): Promise<Destination> => {
        if (!scope) return destination(null);
        const dest = destination(scope);
        if (!neighbour) return dest;
        const other = destination(ZETA);
        neighbours.push(other);
        const prepare = async () => {
          await other.prepare();
          await dest.prepare();
        };
        return withPrepare(withNeighbour(dest, other, ['writeTables', 'flushStaged']), prepare);
      },
      async viewColumns(view: string) {
        const [meta] = await client.dataset(datasetId).table(view).getMetadata();
        const names = ((meta.schema?.fields ?? []) as { name: string }[]).map((f) => f.name);
        if (!scope || view === 'ticket_custom_field_labels') return names;
        expect(names[0], view).toBe('workspace_id');
        return names.slice(1);
      },
      teardown: async () => {
        await Promise.all(neighbours.map((n) => n.close()));
      },
    };
  };

viewsSuite('BigQuery (bqemulator)', viewsHarness('views'));
customFieldsSuite('BigQuery (bqemulator)', viewsHarness('custom_fields'));
historyViewsSuite('BigQuery (bqemulator)', viewsHarness('history_views'));
for (const scope of SHARED_TABLES) {
  viewsSuite('BigQuery (bqemulator), shared tables', viewsHarness('views_shared', scope));
  // Without a neighbour: the custom-field columns are the deployment's (a column's ticket count is every
  // workspace's), as on PostgreSQL.
  customFieldsSuite(
    'BigQuery (bqemulator), shared tables',
    viewsHarness('custom_fields_shared', scope, false),
  );
  historyViewsSuite('BigQuery (bqemulator), shared tables', viewsHarness('history_views_shared', scope));
}
