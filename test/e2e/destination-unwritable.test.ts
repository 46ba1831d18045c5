import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { freePort } from '../../embedded/free-port.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { cli } from '../support/cli.js';
import { testTemporalAddress } from '../support/temporal.js';

/**
 * A destination that answers but cannot be written the way a run writes: BigQuery's REST side (the
 * emulator's) reachable, its Storage Write API not (a closed port, as a firewall or missing credentials
 * would make it). The preflight's write probe ends `sync --once` in seconds with one line naming it,
 * instead of a run waiting at "0/0 streams done" while every page's append fails.
 */
describe('sync --once against a destination that cannot be written', () => {
  let emulator: BigQueryEmulator;
  let companion: CompanionHandle;

  beforeAll(async () => {
    emulator = await startBigQueryEmulator({ log: (l) => process.stderr.write(`[unwritable] ${l}\n`) });
    companion = await startCompanion({ seed: 5, tickets: 10, rateLimits: false });
  }, 600_000);
  afterAll(async () => {
    await companion?.stop();
    await emulator?.stop();
  });

  it('BigQuery with its Storage Write API out of reach: exit 1 within seconds, one line naming it', async () => {
    const closed = `127.0.0.1:${await freePort()}`;
    const dataset = `unwritable_${Date.now().toString(36)}`;
    const r = await cli(['sync', '--once'], {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: `bigquery://${emulator.projectId}/${dataset}`,
      BIGQUERY_API_ENDPOINT: emulator.endpoint,
      BIGQUERY_STORAGE_ENDPOINT: closed,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: `unwritable-${Date.now().toString(36)}`,
    });
    console.info(`sync --once, Storage Write API closed: exit ${r.code} after ${r.ms} ms`);
    expect(r.code, r.stderr).toBe(1);
    const errors = r.stderr.split('\n').filter((l) => l.startsWith('error:'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain(`the BigQuery Storage Write API (${closed}) does not take an append`);
    expect(r.ms).toBeLessThan(60_000);
    expect(r.stderr + r.stdout).not.toContain(companion.keys.admin);

    // The `preflight` command, on the dataset that run prepared: the destination line says the same.
    const p = await cli(['preflight', '--streams', 'tickets'], {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: `bigquery://${emulator.projectId}/${dataset}`,
      BIGQUERY_API_ENDPOINT: emulator.endpoint,
      BIGQUERY_STORAGE_ENDPOINT: closed,
    });
    console.info(`preflight, Storage Write API closed: exit ${p.code} after ${p.ms} ms`);
    expect(p.code, p.stderr).toBe(1);
    expect(p.stdout).toMatch(
      new RegExp(
        `destination +FAILED +the destination cannot be written: the BigQuery Storage Write API \\(${closed.replaceAll('.', '\\.')}\\)`,
      ),
    );
  }, 240_000);
});
