import { randomBytes } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BigQueryDestination, emulatorClientOptions } from '../../connectors/bigquery/destination.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { type BigQueryQuotaProxy, startBigQueryQuotaProxy } from '../support/bigquery-quota-proxy.js';
import { type Pipeline, startPipeline } from './harness.js';

/**
 * A dataset outside the US multi-region (`EU`) syncs, on the emulator behind the quota proxy, which keeps
 * BigQuery's rule that a job runs where the datasets it references are (bqemulator itself runs a job
 * anywhere: test/support/bigquery-locations.ts). With BIGQUERY_LOCATION unset the sync finds the dataset's
 * location; a BIGQUERY_LOCATION the dataset is not in stops it with an error naming both.
 */
describe('BigQuery outside the US: BIGQUERY_LOCATION and the dataset’s own location', () => {
  let emulator: BigQueryEmulator;
  let proxy: BigQueryQuotaProxy;
  let bq: BigQuery;
  let p: Pipeline | undefined;
  const dataset = `eu_${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    emulator = await startBigQueryEmulator({
      log: (l) => process.stderr.write(`[bigquery-location] ${l}\n`),
    });
    proxy = await startBigQueryQuotaProxy(emulator.endpoint, { enforce: true });
    bq = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(proxy.endpoint) });
    // Created the way a team in the EU creates its dataset, before the sync ever runs.
    await bq.dataset(dataset).create({ location: 'EU' });
  }, 600_000);
  /** A destination on the emulator, through the proxy; `location` as BIGQUERY_LOCATION. */
  const destinationOn = (datasetId: string, location?: string) =>
    new BigQueryDestination({
      projectId: emulator.projectId,
      datasetId,
      location,
      apiEndpoint: proxy.endpoint,
      storageEndpoint: emulator.grpcEndpoint,
    });
  afterAll(async () => {
    await p?.close();
    await proxy?.stop();
    await emulator?.stop();
  });

  it('the stand-in refuses a job whose location does not hold its dataset, as BigQuery does', async () => {
    await bq.query({ query: `CREATE TABLE \`${dataset}\`.probe (x INT64)`, location: 'EU' });
    await expect(
      bq.query({ query: `SELECT COUNT(*) AS n FROM \`${dataset}\`.probe`, location: 'US' }),
    ).rejects.toThrow(`Dataset ${emulator.projectId}:${dataset} was not found in location US`);
    const [rows] = await bq.query({
      query: `SELECT COUNT(*) AS n FROM \`${dataset}\`.probe`,
      location: 'EU',
    });
    expect(rows).toEqual([{ n: 0 }]);
    expect(proxy.report().violations.map((v) => v.rule)).toEqual(['location']);
    proxy.reset();
  });

  it('a destination without a location prepares the EU dataset and runs its jobs there', async () => {
    const destination = destinationOn(dataset);
    try {
      await destination.prepare();
      expect(await destination.bookkeeping.listRuns(5)).toEqual([]);
      expect(proxy.report().violations).toEqual([]);
    } finally {
      await destination.close();
    }
  }, 300_000);

  it('an EU dataset syncs with BIGQUERY_LOCATION unset: every job runs in the dataset’s location', async () => {
    p = await startPipeline('e2e_bigquery_location', {
      companion: { seed: 31, tickets: 12, rateLimits: false },
      env: {
        DESTINATION_URL: `bigquery://${emulator.projectId}/${dataset}`,
        BIGQUERY_API_ENDPOINT: proxy.endpoint,
        BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint,
        SYNC_LOOKBACK: 'P30D',
      },
    });
    expect(p.config.BIGQUERY_LOCATION).toBeUndefined();
    const summary = await p.run('incremental');
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    expect(proxy.report().violations).toEqual([]);
    const [tickets] = await bq.query({
      query: `SELECT COUNT(*) AS n FROM \`${dataset}\`.tickets`,
      location: 'EU',
    });
    expect((tickets as { n: number }[])[0]!.n).toBeGreaterThan(0);
    const [meta] = await bq.dataset(dataset).getMetadata();
    expect(meta.location).toBe('EU');
  }, 600_000);

  it('BIGQUERY_LOCATION set to where the dataset is not: an error naming both, no job sent', async () => {
    proxy.reset();
    const destination = destinationOn(dataset, 'US');
    try {
      await expect(destination.prepare()).rejects.toThrow(
        `BIGQUERY_LOCATION is US, but dataset ${emulator.projectId}:${dataset} is in EU`,
      );
      expect(proxy.report().violations).toEqual([]);
    } finally {
      await destination.close();
    }
  });

  it('a dataset the sync creates goes to BIGQUERY_LOCATION', async () => {
    const created = `eu_new_${randomBytes(4).toString('hex')}`;
    const destination = destinationOn(created, 'europe-west2');
    try {
      await destination.prepare();
      const [meta] = await bq.dataset(created).getMetadata();
      expect(meta.location).toBe('europe-west2');
      expect(await destination.bookkeeping.listRuns(5)).toEqual([]);
      expect(proxy.report().violations).toEqual([]);
    } finally {
      await destination.close();
    }
  }, 300_000);
});
