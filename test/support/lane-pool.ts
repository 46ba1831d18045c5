import type { ProcessPool, TestSpecification, Vitest } from 'vitest/node';
import { testForks } from './forks.js';
import { laneOfFile, runInLanes } from './lanes.js';

/**
 * Vitest's forks pool, fed one file at a time so that the files of the BigQuery lane
 * (test/support/lanes.ts) never run beside each other while the other files fill the remaining forks.
 * Vitest's own pool takes a whole project's files at once and hands them to free forks in order, which
 * starts lane files together; here at most `testForks()` files are handed to it, each alone, so it never
 * queues and its forks (whose VITEST_POOL_ID picks a fork's Temporal dev server) stay the same ones.
 *
 * Order: a lane file whenever the lane is free, else the integration files, then the unit files (short,
 * they fill the end); within each, vitest's sequencer's order (the slowest first when a previous run is
 * cached, else the largest).
 */
export default function lanePool(vitest: Vitest): ProcessPool {
  // Vitest's own pool (private in its types, public in its runtime since 1.x): the one that holds the
  // forks pool, which then serves both this pool's files and any run without it.
  const inner = (): ProcessPool => {
    const pool = (vitest as unknown as { pool?: ProcessPool }).pool;
    if (!pool)
      throw new Error(`vitest ${vitest.version} has no pool to hand files to (test/support/lane-pool.ts)`);
    return pool;
  };
  // The file as vitest's built-in forks pool runs it (the Temporal native bridge has crashed under worker
  // threads; forks isolate it per file).
  const asForks = (spec: TestSpecification) =>
    spec.project.createSpecification(spec.moduleId, spec.testLines, 'forks');
  let cancelled = false;
  vitest.onCancel(() => {
    cancelled = true;
  });

  return {
    name: 'support-sync-lanes',
    collectTests: (specs, invalidates) => inner().collectTests(specs.map(asForks), invalidates),
    runTests: (specs, invalidates) => {
      const free = specs.filter((s) => laneOfFile(s.moduleId) === null);
      return runInLanes({
        laned: specs.filter((s) => laneOfFile(s.moduleId) !== null),
        others: [
          ...free.filter((s) => s.project.name !== 'unit'),
          ...free.filter((s) => s.project.name === 'unit'),
        ],
        slots: testForks(),
        run: async (spec) => {
          await inner().runTests([asForks(spec)], invalidates);
        },
        cancelled: () => cancelled,
      });
    },
  };
}
