import { randomBytes } from 'node:crypto';
import { BigQuery } from '@google-cloud/bigquery';
import { describe } from 'vitest';
import { emulatorClientOptions } from '../../connectors/bigquery/destination.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { inCampaign } from '../support/campaign.js';
import {
  describeStoredNewer,
  type StoredTicket,
  type Warehouse,
} from './column-policy-stored-newer-suite.js';

/** The scenario of column-policy-stored-newer.test.ts on the BigQuery emulator, in `npm run campaign`. */
async function bigQueryWarehouse(): Promise<Warehouse> {
  const emulator: BigQueryEmulator = await startBigQueryEmulator({
    log: (l) => process.stderr.write(`[policy-stored-newer] ${l}\n`),
  });
  const dataset = `e2e_${randomBytes(4).toString('hex')}`;
  const bq = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.endpoint) });
  return {
    env: {
      DESTINATION_URL: `bigquery://${emulator.projectId}/${dataset}`,
      BIGQUERY_API_ENDPOINT: emulator.endpoint,
      BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint,
    },
    tickets: async () => {
      const [rows] = await bq.query(
        `SELECT id, UNIX_MILLIS(updated_at) AS updated_ms, _content_hash AS content_hash, contact_email,
                contact_phone, TO_JSON_STRING(_raw) AS raw
         FROM \`${dataset}\`.tickets WHERE _deleted_at IS NULL ORDER BY id`,
      );
      return (rows as StoredTicket[]).map((r) => ({ ...r, updated_ms: Number(r.updated_ms) }));
    },
    close: () => emulator.stop(),
  };
}

describe.runIf(inCampaign())('on BigQuery (bqemulator)', () => {
  describeStoredNewer('BigQuery (bqemulator)', bigQueryWarehouse);
});
