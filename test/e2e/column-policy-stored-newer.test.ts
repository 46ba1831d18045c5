import { describeStoredNewer, postgresWarehouse } from './column-policy-stored-newer-suite.js';

/**
 * The tickets page re-derives stored rows through the destination, and each warehouse reads them its own
 * way (BigQuery: liveRows after its own flush, storedVersions from the run's version cache; PostgreSQL: the
 * table). The test suite runs PostgreSQL (this file, outside the BigQuery lane); BigQuery, whose path has
 * the more parts, runs in `npm run campaign` (column-policy-stored-newer-bigquery.test.ts: three CLI syncs
 * into the emulator took five minutes of the lane), its parts in the suite on the emulator: liveRows after a
 * flush and storedVersions from the version cache (test/destinations/bigquery.test.ts), the column policy
 * through the pipeline (test/e2e/column-policy.test.ts).
 */
describeStoredNewer('PostgreSQL', postgresWarehouse);
