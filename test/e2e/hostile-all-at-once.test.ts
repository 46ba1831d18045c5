import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';
import { runAllAtOnce } from './all-at-once.js';

/**
 * Issue 46's "done when", scaled down (bench/hostile.ts runs it at full size): one `sync --once` against a
 * source doing every misbehaviour at once ends by itself, its log small and free of escapes and of the key,
 * the key in no warehouse column, everything served correctly stored; the next run, against the behaving
 * companion, makes the warehouse equal to it. Every check is reported, not only the first to fail.
 */
describe('sync --once against a source doing everything at once', () => {
  const workDir = mkdtempSync(join(tmpdir(), 'hostile-all-at-once-'));
  afterAll(() => rmSync(workDir, { recursive: true, force: true }));

  it('ends by itself, bounded and clean, stores what was served right; the next run is complete', {
    timeout: 420_000,
  }, async () => {
    const { checks, figures } = await runAllAtOnce({
      tickets: 40,
      seed: 46,
      // 300,000 numbers (600 kB) on one page; past the ~5,000 levels where recursion overflows.
      scale: { oversizedItems: 300_000, depth: 6_000 },
      temporalAddress: testTemporalAddress(),
      createDatabase: freshDatabase,
      workDir,
      // A bound for a run that would never end (an endless list, a year-long reset), not a measure of speed:
      // it ends in about 40 s alone, and took 62 s once beside three other files on a loaded machine.
      deadlineMs: 150_000,
      maxLogBytes: 3 * 1024 * 1024,
      // Scaled down too: a stall costs 3 s, not a minute, and the page bound (SYNC_MAX_PAGES, far above any
      // real workspace by default) is 100, above any scope of this world, so the endless list ends in seconds.
      env: { SUPPORT_API_REQUEST_DEADLINE: 'PT3S', SYNC_MAX_PAGES: '100' },
    });
    console.info(
      [
        ...Object.entries(figures).map(([k, v]) => `${k}: ${v}`),
        ...checks.map((c) => `${c.pass ? 'PASS' : 'FAIL'} ${c.name} — ${c.detail}`),
      ].join('\n'),
    );
    for (const c of checks) expect.soft(c.pass, `${c.name}: ${c.detail} (fails on: ${c.failsOn})`).toBe(true);
  });
});
