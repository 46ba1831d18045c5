import { ticketHistorySuite } from './ticket-history-suite.js';

/**
 * ticket_history and the tie-out on PostgreSQL, over four rounds of changes, so that tickets reopened in
 * one round are resolved in the next (several intervals per ticket). The same suite on BigQuery:
 * test/e2e/ticket-history-bigquery.test.ts.
 */
ticketHistorySuite({
  kind: 'postgres',
  rounds: 4,
  env: async () => ({ env: {}, stop: async () => undefined }),
});
