import { randomBytes } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emulatorClientOptions } from '../../connectors/bigquery/destination.js';
import { FLUSH_SCRIPT_MARK } from '../../connectors/bigquery/flush.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { type BigQueryQuotaProxy, startBigQueryQuotaProxy } from '../support/bigquery-quota-proxy.js';
import { sized } from '../support/campaign.js';
import { startTcpOutageProxy, type TcpOutageProxy } from '../support/tcp-outage-proxy.js';
import { duplicateIds, expectBigQueryEqualsSource } from './bigquery-compare.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';
import { COMPARED_TABLES, sourceSnapshot } from './source-snapshot.js';

/**
 * How long each half of the outage lasts: 10 s in the test suite, half a minute in `npm run campaign`
 * (test/support/campaign.ts). Either way a request the silence leaves unanswered is held for the quota
 * proxy's 30 s before its socket drops, and failing jobs back off past the outage's end, so the short one
 * takes every path the long one does (503s retried, timeouts retried, the run waiting and resuming).
 */
const PHASE_MS = sized(10_000, 30_000);

/**
 * BigQuery goes away in the middle of a first sync — first answering 503 (its Storage Write API refusing
 * connections), then not answering at all (both black holes): jobs (checkpoint reads, flushes, the ledger)
 * and staging appends fail or time out and are retried, the run waits, resumes, and ends equal to the
 * source with no window failed. The quota proxy stands in front of the REST endpoint, a TCP proxy in front
 * of the Storage Write API's gRPC port.
 */
describe(`BigQuery unreachable for ${(2 * PHASE_MS) / 1000} s during a sync`, () => {
  let emulator: BigQueryEmulator;
  let proxy: BigQueryQuotaProxy;
  let storageProxy: TcpOutageProxy;
  let p: Pipeline;
  let down: number | 'timeout' | null = null;
  let flushes = 0;
  const dataset = `outage_${randomBytes(4).toString('hex')}`;
  const from = () => new Date(Date.now() - 200 * DAY_MS).toISOString();

  beforeAll(async () => {
    emulator = await startBigQueryEmulator();
    proxy = await startBigQueryQuotaProxy(emulator.endpoint, {
      enforce: true,
      minJobMs: 100,
      outage: () => down,
      onQuery: (sql) => {
        if (sql.startsWith(FLUSH_SCRIPT_MARK)) flushes += 1;
      },
    });
    storageProxy = await startTcpOutageProxy(emulator.grpcEndpoint, () =>
      down === null ? null : down === 'timeout' ? 'silent' : 'reset',
    );
    p = await startPipeline('e2e_bigquery_outage', {
      companion: { seed: 31, tickets: 30, rateLimits: false },
      env: {
        DESTINATION_URL: `bigquery://${emulator.projectId}/${dataset}`,
        BIGQUERY_API_ENDPOINT: proxy.endpoint,
        BIGQUERY_STORAGE_ENDPOINT: storageProxy.endpoint,
      },
    });
  }, 600_000);
  afterAll(async () => {
    down = null;
    await p?.close();
    await proxy?.stop();
    await storageProxy?.stop();
    await emulator?.stop();
  });

  it('waits out 503s and silence, resumes, ends exact, no window failed', async () => {
    const run = p.run('incremental');
    // The outage starts once the sync has merged something (it is under way, its tables exist).
    while (flushes < 2) await new Promise((r) => setTimeout(r, 20));
    down = 503;
    await new Promise((r) => setTimeout(r, PHASE_MS));
    down = 'timeout';
    await new Promise((r) => setTimeout(r, PHASE_MS));
    down = null;
    const summary = await run;
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    const windows = (await p.deps.destination.bookkeeping.listRuns(500)).filter(
      (r) => r.parent_run_id === summary.run_id,
    );
    expect(windows.length).toBeGreaterThan(0);
    expect(
      windows.filter((w) => w.status !== 'succeeded').map((w) => `${w.workflow_id}: ${w.error}`),
    ).toEqual([]);
    expect(proxy.report().violations).toEqual([]);
    expect(storageProxy.interrupted(), 'the Storage Write API went away too').toBeGreaterThan(0);
    process.stderr.write(
      `[bigquery-outage] Storage Write API connections broken: ${storageProxy.interrupted()}\n`,
    );
    const bq = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.endpoint) });
    await expectBigQueryEqualsSource(bq, dataset, await sourceSnapshot(p.deps.client, from()));
    expect(await duplicateIds(bq, dataset)).toEqual(Object.fromEntries(COMPARED_TABLES.map((t) => [t, 0])));
  }, 900_000);
});
