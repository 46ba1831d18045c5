/**
 * How many test files run at once (vitest's forks). Most integration files spend their time waiting on
 * timers, backoffs and child processes rather than on CPU, so on a 2-core machine more forks can finish the
 * suite sooner; but BigQuery emulator files beside each other slow down several times over, so the default
 * stays one file at a time until they are kept apart. SUPPORT_SYNC_TEST_FORKS sets it.
 */
export const TEST_FORKS_ENV = 'SUPPORT_SYNC_TEST_FORKS';

export function testForks(): number {
  const raw = process.env[TEST_FORKS_ENV] ?? '1';
  const forks = Number(raw);
  if (!Number.isInteger(forks) || forks < 1 || forks > 16)
    throw new Error(`${TEST_FORKS_ENV}=${raw}: expected a whole number of forks from 1 to 16`);
  return forks;
}
