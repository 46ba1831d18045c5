import { randomBytes } from 'node:crypto';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { sized } from '../support/campaign.js';
import { ticketHistorySuite } from './ticket-history-suite.js';

/**
 * ticket_history and the tie-out on BigQuery (bqemulator): one round of changes in the test suite, enough
 * for its dialect's history and tie-out (several intervals per ticket on BigQuery:
 * test/destinations/history-views-suite.ts), and four in `npm run campaign` (test/support/campaign.ts), as
 * PostgreSQL runs in the suite (test/e2e/ticket-history.test.ts).
 */
ticketHistorySuite({
  kind: 'bigquery',
  rounds: sized(1, 4),
  env: async () => {
    const emulator: BigQueryEmulator = await startBigQueryEmulator({
      log: (l) => process.stderr.write(`[ticket-history bigquery] ${l}\n`),
    });
    return {
      env: {
        DESTINATION_URL: `bigquery://${emulator.projectId}/history_${randomBytes(4).toString('hex')}`,
        BIGQUERY_API_ENDPOINT: emulator.endpoint,
        BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint,
      },
      stop: () => emulator.stop(),
    };
  },
});
