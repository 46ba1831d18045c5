import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BIGQUERY_LANE, laneOfFile, runInLanes } from '../support/lanes.js';

/**
 * The test suite's lanes (test/support/lanes.ts): files with a BigQuery emulator run one at a time while
 * the others fill the forks, and no file reaches an emulator without being in that lane.
 */
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const testModules = readdirSync(join(ROOT, 'test'), { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts'))
  .map((f) => join('test', f));
/** Any import of the emulator's starter (the lane's own pattern is this one, strict on the path). */
const STARTS_EMULATOR = /import \{[^}]*\bstartBigQueryEmulator\b[^}]*\} from '/;

/** Runs `runInLanes` over named items that each take `ms` (fake work) and records what ran beside what. */
async function trace(laned: string[], others: string[], slots: number, ms = (_: string) => 5) {
  const running = new Set<string>();
  const started: string[] = [];
  let mostAtOnce = 0;
  let lanedAtOnce = 0;
  await runInLanes({
    laned,
    others,
    slots,
    run: async (item) => {
      running.add(item);
      started.push(item);
      mostAtOnce = Math.max(mostAtOnce, running.size);
      lanedAtOnce = Math.max(lanedAtOnce, [...running].filter((r) => laned.includes(r)).length);
      await new Promise((r) => setTimeout(r, ms(item)));
      running.delete(item);
    },
  });
  return { started, mostAtOnce, lanedAtOnce };
}

describe('test lanes', () => {
  it('the files that start a BigQuery emulator are in its lane, the others in none', () => {
    const starters = testModules.filter(
      (f) => f.endsWith('.test.ts') && STARTS_EMULATOR.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    expect(starters).toContain(join('test', 'destinations', 'bigquery.test.ts'));
    expect(starters).toContain(join('test', 'e2e', 'bigquery.test.ts'));
    expect(starters.filter((f) => laneOfFile(join(ROOT, f)) !== BIGQUERY_LANE)).toEqual([]);
    expect(laneOfFile(join(ROOT, 'test', 'e2e', 'sync.test.ts'))).toBeNull();
    // Provisions the emulator (installs it), starts none.
    expect(laneOfFile(join(ROOT, 'test', 'unit', 'tool-child-environments.test.ts'))).toBeNull();
  });

  it('no module under test/ but a test file starts an emulator (a file using it would escape the lane)', () => {
    const helpers = testModules.filter(
      (f) => !f.endsWith('.test.ts') && STARTS_EMULATOR.test(readFileSync(join(ROOT, f), 'utf8')),
    );
    expect(helpers).toEqual([]);
  });

  it('runs the lane one at a time, first whenever it is free, the others beside it within the slots', async () => {
    const laned = ['bq1', 'bq2', 'bq3'];
    const others = ['a', 'b', 'c', 'd', 'e', 'f'];
    const { started, mostAtOnce, lanedAtOnce } = await trace(laned, others, 3, (item) =>
      item.startsWith('bq') ? 30 : 5,
    );
    expect(lanedAtOnce).toBe(1);
    expect(mostAtOnce).toBe(3);
    expect(started[0]).toBe('bq1');
    expect(started.sort()).toEqual([...laned, ...others].sort());
  });

  it('with one slot, runs everything one after the other, the lane first', async () => {
    const { started, mostAtOnce } = await trace(['bq1', 'bq2'], ['a', 'b'], 1);
    expect(mostAtOnce).toBe(1);
    expect(started).toEqual(['bq1', 'bq2', 'a', 'b']);
  });

  it('runs every file when some fail, then rejects with each failure', async () => {
    const ran: string[] = [];
    const outcome = await runInLanes({
      laned: ['bq1'],
      others: ['a', 'b'],
      slots: 2,
      run: async (item) => {
        ran.push(item);
        if (item !== 'b') throw new Error(`${item} failed`);
      },
    }).catch((err: unknown) => err);
    expect(ran.sort()).toEqual(['a', 'b', 'bq1']);
    expect(outcome).toBeInstanceOf(AggregateError);
    expect((outcome as AggregateError).errors.map((e: Error) => e.message).sort()).toEqual([
      'a failed',
      'bq1 failed',
    ]);
  });
});
