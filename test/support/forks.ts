/**
 * How many test files run at once (vitest's forks). Most integration files spend their time waiting on
 * timers, backoffs and child processes rather than on CPU, so on a 2-core machine four forks finish the
 * suite sooner than fewer: the BigQuery lane's file (test/support/lanes.ts: one at a time, its emulator
 * computing) and three other files beside it. Measured whole on the same loaded machine, one run each:
 * 1,680 s at three, 1,416 s at four, every file passing; the files beyond the lane's end the run, not the
 * lane, and each file spends seconds importing before its first test. SUPPORT_SYNC_TEST_FORKS sets it (1
 * runs one file at a time, the lane's first).
 */
export const TEST_FORKS_ENV = 'SUPPORT_SYNC_TEST_FORKS';
const DEFAULT_FORKS = 4;

export function testForks(): number {
  const raw = process.env[TEST_FORKS_ENV] ?? String(DEFAULT_FORKS);
  const forks = Number(raw);
  if (!Number.isInteger(forks) || forks < 1 || forks > 16)
    throw new Error(`${TEST_FORKS_ENV}=${raw}: expected a whole number of forks from 1 to 16`);
  return forks;
}
