import { defineConfig } from 'vitest/config';
import { testForks } from './test/support/forks.js';

/**
 * Two projects: `unit` needs nothing but Node (schemas, companion over HTTP, connector against the
 * companion, recorded workflow histories replayed in-process); `integration` gets one PostgreSQL cluster per
 * run and one Temporal dev server per fork from its globalSetup (each test file then creates its own
 * database and task queues). Files of both projects run in `testForks()` forks at once
 * (test/support/forks.ts), the BigQuery emulator's files one at a time among them (test/support/lanes.ts).
 */
const shared = {
  // Vitest's forks pool, fed file by file (test/support/lane-pool.ts).
  pool: './test/support/lane-pool.ts',
  testTimeout: 120_000,
  hookTimeout: 600_000,
  teardownTimeout: 60_000,
};

export default defineConfig({
  test: {
    poolOptions: { forks: { maxForks: testForks(), minForks: 1 } },
    projects: [
      {
        test: {
          ...shared,
          name: 'unit',
          include: [
            'test/unit/**/*.test.ts',
            'test/companion/**/*.test.ts',
            'test/connector/**/*.test.ts',
            // Replay needs no server (test/workflows/replay.test.ts).
            'test/workflows/**/*.test.ts',
          ],
        },
      },
      {
        test: {
          ...shared,
          name: 'integration',
          // A bound for a hung test, not a measure: a file here shares two cores with the files beside it
          // (and CI machines with other work), and a first sync into the BigQuery emulator can take minutes.
          testTimeout: 300_000,
          include: [
            'test/foundation/**/*.test.ts',
            'test/destinations/**/*.test.ts',
            'test/e2e/**/*.test.ts',
          ],
          globalSetup: ['test/support/global-setup.ts'],
          setupFiles: [
            'test/support/lane-priority.ts',
            'test/support/quiet-temporal.ts',
            'test/support/fork-temporal.ts',
          ],
        },
      },
    ],
  },
});
