import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunProgress } from '../../schemas/run-summary.js';
import { settingsFromConfig } from '../../worker/config.js';
import { newRunId, runSync } from '../../worker/run-sync.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';
import { warehouseRows } from './warehouse-compare.js';

/**
 * Issue 14: a real outage (every request failing) backs off, shows as "source failing since …" in the live
 * progress, and does not fail the run before the patience: when the source comes back, the run finishes.
 */
describe('an outage of the source during a run', () => {
  let p: Pipeline;
  beforeAll(async () => {
    p = await startPipeline('e2e_outage', { companion: { seed: 17, tickets: 40 } });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('backs off, says the source is failing, and finishes once it is back', async () => {
    p.companion.setOptions({ faults: { rate: 1, kinds: ['5xx'] } });
    const failingNotes: string[] = [];
    let restored = false;
    const now = new Date();
    const summary = await runSync(
      p.env.client,
      p.taskQueue,
      {
        runId: newRunId(now),
        mode: 'incremental',
        streams: ['tickets', 'ticket_messages', 'views'],
        settings: settingsFromConfig(p.config, now),
      },
      (progress: RunProgress) => {
        const failing = Object.values(progress.streams)
          .map((s) => s.current ?? '')
          .filter((c) => c.includes('source failing since'));
        failingNotes.push(...failing);
        if (failing.length > 0 && !restored) {
          restored = true;
          p.companion.setOptions({ faults: undefined });
        }
      },
    );
    expect(failingNotes[0]).toMatch(/source failing since \S+ \(attempt \d+: .*SERVICE_UNAVAILABLE/);
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    const source = await sourceSnapshot(p.deps.client, new Date(Date.now() - 500 * DAY_MS).toISOString());
    for (const table of ['tickets', 'ticket_messages', 'views'] as const) {
      const stored = await warehouseRows(p.db, table);
      expect({ table, ids: [...stored.keys()].sort() }).toEqual({
        table,
        ids: [...source[table].keys()].sort(),
      });
      for (const [id, raw] of source[table])
        expect({ table, id, raw: stored.get(id) }).toEqual({ table, id, raw });
    }
  });
});
