import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOO_DEEP_REASON } from '../../connectors/support-api/index.js';
import { type Pipeline, startPipeline } from './harness.js';
import { type RewritingProxy, startRewritingProxy } from './rewriting-proxy.js';

/**
 * A source that serves one ticket with an unknown field nested 4,000 arrays deep (the real run: companion
 * behind a rewriting proxy, Temporal, PostgreSQL). That ticket is set aside in `_rejected` with its reason;
 * every other ticket and thread is stored; nothing is retried for it.
 */
describe('an item nested past the JSON depth cap', () => {
  let p: Pipeline;
  let proxy: RewritingProxy;

  beforeAll(async () => {
    proxy = await startRewritingProxy();
    p = await startPipeline('e2e_deep_item', {
      companion: { seed: 31, tickets: 30, rateLimits: false },
      env: { SUPPORT_API_URL: proxy.url, SYNC_PAGE_SIZE: '10' },
    });
    proxy.target = p.companion.baseUrl;
  });
  afterAll(async () => {
    await p?.close();
    await proxy?.close();
  });

  it('is set aside with its reason; the rest of its page and run is stored, in one pass', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 4_000; i++) deep = [deep];
    let poisonedId: string | null = null;
    let served = 0;
    proxy.rewrite = (path, _query, body) => {
      const b = body as { data?: Record<string, unknown>[] };
      if (path === '/tickets' && Array.isArray(b.data) && b.data.length > 1) {
        poisonedId ??= String(b.data[1]!['id']);
        for (const t of b.data)
          if (t['id'] === poisonedId) {
            t['x_unknown_nested'] = deep;
            served++;
          }
      }
      return b;
    };
    const started = Date.now();
    try {
      const summary = await p.run('full_refresh');
      const ms = Date.now() - started;
      console.info(
        `deep item: run ${summary.status} in ${ms} ms, the poisoned ticket served ${served} times`,
      );
      expect(summary.error).toBeUndefined();
      // Incomplete, not failed: the warehouse misses exactly the item set aside (exit code 3).
      expect(summary.status).toBe('incomplete');
      expect(summary.streams['tickets']?.status).toBe('succeeded');
    } finally {
      proxy.rewrite = null;
    }
    expect(poisonedId).not.toBeNull();
    const liveIds = async () =>
      new Set(
        (await p.db.query('SELECT id FROM support.tickets WHERE _deleted_at IS NULL')).rows.map(
          (r: { id: string }) => r.id,
        ),
      );
    const first = await liveIds();
    expect(first.has(poisonedId!)).toBe(false);
    const rejected = await p.db.query(
      'SELECT reason, resolved_at FROM support._rejected WHERE item_id = $1',
      [poisonedId],
    );
    expect(rejected.rows).toEqual([{ reason: TOO_DEEP_REASON, resolved_at: null }]);
    // Served again as it should be (the source fixed it): stored, its entry resolved, and nothing else
    // was missing the first time.
    const again = await p.run('full_refresh');
    expect(again.error).toBeUndefined();
    const second = await liveIds();
    expect(second.has(poisonedId!)).toBe(true);
    expect(second.size).toBe(first.size + 1);
    const after = await p.db.query('SELECT resolved_at FROM support._rejected WHERE item_id = $1', [
      poisonedId,
    ]);
    expect(after.rows[0].resolved_at).not.toBeNull();
  });
});
