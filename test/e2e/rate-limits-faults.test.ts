import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_LIMITS, type RouteClass } from '../../companion/index.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';
import { requestsPerWindow } from './rate-windows.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource, rowCounts } from './warehouse-compare.js';

const WINDOW_MS = 2000;
const LIMITS: Partial<Record<RouteClass, number>> = { list: 4, detail: 10, analytics: 3, directory: 4 };
const limitOf = (c: RouteClass) => LIMITS[c] ?? DEFAULT_LIMITS[c];

describe('429s under compressed rate-limit windows, with injected 5xx and connection resets', () => {
  let p: Pipeline;

  beforeAll(async () => {
    p = await startPipeline('e2e_rate_limits', {
      companion: {
        seed: 29,
        tickets: 60,
        rateLimits: true,
        rateLimitWindowMs: WINDOW_MS,
        rateLimitOverrides: LIMITS,
        faults: { rate: 0.05, kinds: ['5xx', 'reset'] },
      },
      env: {
        // The key's budget paces every route class at the companion's compressed limits.
        TEMPORAL_TASK_QUEUE: 'support-sync-test',
        SUPPORT_API_RATE_LIMITS: (['list', 'detail', 'analytics', 'directory'] as const)
          .map((c) => `${c}=${limitOf(c)}`)
          .join(','),
        SUPPORT_API_RATE_WINDOW: `PT${WINDOW_MS / 1000}S`,
      },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('loses no row and never sends more than the limit of a route class in any server window', async () => {
    const started = Date.now();
    const summary = await p.run('incremental');
    const elapsed = Date.now() - started;
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    const log = p.companion.requestLog.slice();

    const { over, perClass, rateLimited } = requestsPerWindow(log, WINDOW_MS, limitOf);
    const faults = log.filter((r) => r.routeClass === null);
    console.info(
      `rate-limits: sync ${elapsed} ms, ${log.length} requests, ${faults.length} injected faults, ` +
        `${rateLimited.length} 429s (${rateLimited.map((r) => r.routeClass).join(', ')}); per class ${JSON.stringify(perClass)}`,
    );
    expect(faults.length).toBeGreaterThan(0);
    // The ledger records HTTP requests, retries included: exactly what the source received.
    const ledger = await p.db.query('SELECT requests FROM support._sync_runs WHERE run_id = $1', [
      summary.run_id,
    ]);
    expect(Number(ledger.rows[0].requests)).toBe(log.length);
    expect(over, 'route class windows over the limit').toEqual([]);

    // A request is repeated only after that same request failed (an injected fault or a 429): no page is
    // fetched twice because some other page failed.
    const key = (r: (typeof log)[number]) => `${r.method} ${r.path} ${JSON.stringify(r.query)}`;
    const lastStatus = new Map<string, number>();
    const needless: string[] = [];
    // Report queries are told apart by their body, which the log does not hold, and the tie-out asks a query
    // again on purpose when its numbers differ (to tell a moving source from a mismatch): not counted here.
    for (const r of log.filter((r) => !r.path.endsWith('/reports/query'))) {
      const previous = lastStatus.get(key(r));
      const faulted = (s: number) => s === 0 || s === 429 || s === 503;
      if (previous !== undefined && !faulted(previous)) needless.push(`${key(r)} (was ${previous})`);
      lastStatus.set(key(r), r.routeClass === null && r.status !== 503 ? 0 : r.status);
    }
    expect(needless, 'requests repeated although they had succeeded').toEqual([]);

    // The truth, read with limits and faults off.
    p.companion.setOptions({ rateLimits: false, faults: undefined });
    await rowCounts(p.db);
    await expectWarehouseEqualsSource(
      p.db,
      await sourceSnapshot(p.deps.client, new Date(Date.now() - 200 * DAY_MS).toISOString()),
    );
  }, 240_000);
});
