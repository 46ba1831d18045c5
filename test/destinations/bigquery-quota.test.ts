import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { BigQuery, type Job, type Table } from '@google-cloud/bigquery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emulatorClientOptions } from '../../connectors/bigquery/destination.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { type BigQueryQuotaProxy, startBigQueryQuotaProxy } from '../support/bigquery-quota-proxy.js';

/** Loads newline-delimited JSON into `table` with a load job (the client's multipart upload). */
function load(table: Table, fields: { name: string; type: string }[], ndjson: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = table.createWriteStream({ sourceFormat: 'NEWLINE_DELIMITED_JSON', schema: { fields } });
    stream.on('error', reject);
    stream.on('complete', (job: Job) => {
      const error = job.metadata?.status?.errorResult;
      if (error) reject(new Error(`load job failed: ${error.message}`));
      else resolve();
    });
    Readable.from([Buffer.from(ndjson)]).pipe(stream);
  });
}

/**
 * The quota proxy makes the emulator refuse what BigQuery refuses (per-table DML concurrency and rate,
 * conflicting transactions), so a destination test through it fails where the real service would.
 */
describe('BigQuery quota proxy in front of the emulator', () => {
  let emulator: BigQueryEmulator;
  let proxy: BigQueryQuotaProxy;
  let bq: BigQuery;
  const dataset = `quota_${randomBytes(4).toString('hex')}`;
  const table = (name: string) => `\`${dataset}\`.\`${name}\``;

  beforeAll(async () => {
    emulator = await startBigQueryEmulator();
    proxy = await startBigQueryQuotaProxy(emulator.endpoint, { enforce: true, minJobMs: 300 });
    bq = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(proxy.endpoint) });
    await bq.createDataset(dataset);
    await bq.query(`CREATE TABLE ${table('t')} (id STRING, v INT64)`);
    await bq.query(`CREATE TABLE ${table('u')} (id STRING, v INT64)`);
    proxy.reset();
  }, 600_000);
  afterAll(async () => {
    await proxy?.stop();
    await emulator?.stop();
  });

  it('passes jobs through and counts them per table', async () => {
    await bq.query(`INSERT INTO ${table('t')} (id, v) VALUES ('a', 1)`);
    await bq.query(`UPDATE ${table('t')} SET v = 2 WHERE id = 'a'`);
    const [rows] = await bq.query(`SELECT v FROM ${table('t')} WHERE id = 'a'`);
    expect(rows).toEqual([{ v: 2 }]);
    const report = proxy.report();
    expect(report.violations).toEqual([]);
    expect(report.tables['t']).toMatchObject({
      dmlStatements: 2,
      mutatingDml: 1,
      peakConcurrentMutatingDml: 1,
    });
    expect(report.queryJobs).toBe(3);
  });

  it('refuses a third mutating DML job on a table while two run, as BigQuery does', async () => {
    proxy.reset();
    // Jobs are created without waiting for them: all three are running when the third arrives.
    const created = await Promise.allSettled(
      [1, 2, 3].map((n) => bq.createQueryJob({ query: `UPDATE ${table('u')} SET v = ${n} WHERE true` })),
    );
    const refused = created.filter((c) => c.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect(String((refused[0] as PromiseRejectedResult).reason)).toMatch(/mutating DML jobs running on u/);
    expect(proxy.report().violations.map((v) => v.rule)).toEqual(['concurrent-mutating-dml']);
    for (const c of created) if (c.status === 'fulfilled') await c.value[0].getQueryResults();
  });

  it('refuses a transaction that modifies a table another running job modifies', async () => {
    proxy.reset();
    const first = bq.createQueryJob({
      query: `BEGIN TRANSACTION; UPDATE ${table('t')} SET v = 3 WHERE true; COMMIT TRANSACTION;`,
    });
    await new Promise((r) => setTimeout(r, 50)); // the first has arrived and runs (300 ms)
    await expect(
      bq.createQueryJob({
        query: `BEGIN TRANSACTION; INSERT INTO ${table('t')} (id) VALUES ('b'); COMMIT TRANSACTION;`,
      }),
    ).rejects.toThrow(/BigQuery aborts the later one/);
    await (await first)[0].getQueryResults();
    // Once the first is seen done, the table is free again.
    await bq.query(`BEGIN TRANSACTION; INSERT INTO ${table('t')} (id) VALUES ('c'); COMMIT TRANSACTION;`);
  });

  it("passes a load job's upload through and counts it, with the staging table's creation, on its table", async () => {
    proxy.reset();
    const fields = [
      { name: 'id', type: 'STRING' },
      { name: 'v', type: 'INT64' },
    ];
    const stage = bq.dataset(dataset).table('_stage_t_0a1b2c3d4e5f');
    await stage.create({ schema: { fields } });
    await load(stage, fields, '{"id":"a","v":1}\n{"id":"bc","v":null}\n');
    const [rows] = await bq.query(`SELECT COUNT(*) AS n FROM ${table('_stage_t_0a1b2c3d4e5f')}`);
    expect(rows).toEqual([{ n: 2 }]);
    const report = proxy.report();
    expect(report.loadJobs).toBe(1);
    // tables.insert and the load job's output are metadata updates of the staging table.
    expect(report.tables['_stage_t*']).toMatchObject({ loadJobs: 1, tableOps: 2, readJobs: 1 });
    expect(report.requests['POST /upload/projects/*/jobs']).toBe(1);
    expect(report.violations).toEqual([]);
  });

  it('refuses the sixth metadata update of one table within 10 seconds (DDL included)', async () => {
    proxy.reset();
    for (let i = 0; i < 5; i++)
      await bq.query(`ALTER TABLE ${table('t')} ADD COLUMN IF NOT EXISTS c${i} STRING`);
    await expect(bq.query(`ALTER TABLE ${table('t')} ADD COLUMN IF NOT EXISTS c5 STRING`)).rejects.toThrow(
      /6 metadata updates of t within 10 s/,
    );
    expect(proxy.report().tables['t']).toMatchObject({ tableOps: 5, peakTableOpsPer10s: 5 });
  });

  it('refuses the 26th DML statement on one table within 10 seconds', async () => {
    proxy.reset();
    const script = Array.from(
      { length: 25 },
      (_, i) => `INSERT INTO ${table('u')} (id) VALUES ('r${i}');`,
    ).join('\n');
    await bq.query(script);
    await expect(bq.query(`INSERT INTO ${table('u')} (id) VALUES ('one-too-many')`)).rejects.toThrow(
      /26 DML statements on u within 10 s/,
    );
    expect(proxy.report().tables['u']!.peakDmlPer10s).toBe(25);
  });
});
