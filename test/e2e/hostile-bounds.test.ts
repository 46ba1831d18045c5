import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_EMPTY_PAGES_PER_SCOPE } from '../../activities/sync-page.js';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { type CliResult, cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';
import { type HostileProxy, startHostileProxy } from './hostile-proxy.js';

interface Summary {
  status: string;
  error?: string;
  streams: Record<string, { status: string; rows: number }>;
}
const summaryOf = (r: CliResult) => JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Summary;

const MAX_PAGES = 40;
const send = (res: import('node:http').ServerResponse, body: string) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end(body);
/** A page of no items that says there are more, after a cursor never seen before: a list without an end. */
const sendEmptyPageWithMore = (res: import('node:http').ServerResponse, cursor: string) =>
  send(res, JSON.stringify({ success: true, data: [], pagination: { has_more: true, next_cursor: cursor } }));

/**
 * `sync --once` against the companion behind a proxy whose lists cost more than they send: a list that says
 * `has_more` for ever, a page of far more items than asked for, an item nested 10,000 levels deep, an item
 * keyed `__proto__`. Each ends within its bound — the page bound, one violation, one item set aside, the key
 * stored — and everything else is synced, in one run that ends by itself with a log of a few lines a page.
 */
describe('sync --once: a source bounded by what it sends', () => {
  let companion: CompanionHandle;
  let proxy: HostileProxy;

  beforeAll(async () => {
    companion = await startCompanion({ seed: 11, tickets: 30, rateLimits: false });
    proxy = await startHostileProxy(companion.baseUrl);
  });
  afterAll(async () => {
    await proxy?.close();
    await companion?.stop();
  });

  it('endless list, oversized page, deep item, __proto__ key: each bounded, the rest synced', async () => {
    const key = companion.keys.admin;
    const views = await (
      await fetch(`${companion.baseUrl}/public/v1/views?limit=100`, { headers: { 'cx-api-key': key } })
    ).text();
    const protoViews = views.replace('{"id"', '{"__proto__":{"polluted":true},"id"');
    expect(protoViews).not.toBe(views);
    let deep = '0';
    for (let i = 0; i < 10_000; i++) deep = `[${deep}]`;
    let tagPages = 0;
    proxy.misbehave = ({ path, query }, res) => {
      if (query.get('limit') === '1') return false; // the preflight's probes are answered
      if (path === '/tags') {
        tagPages += 1;
        sendEmptyPageWithMore(res, `c${tagPages}`);
        return true;
      }
      if (path === '/teams') {
        const numbers = Array.from({ length: 200_000 }, (_, i) => i).join(',');
        send(res, `{"success":true,"data":[${numbers}],"pagination":{"has_more":false,"next_cursor":null}}`);
        return true;
      }
      if (path === '/agents') {
        send(
          res,
          `{"success":true,"data":[{"id":"agent-deep","x":${deep}}],"pagination":{"has_more":false,"next_cursor":null}}`,
        );
        return true;
      }
      if (path === '/views') {
        send(res, protoViews);
        return true;
      }
      return false;
    };
    const databaseUrl = await freshDatabase('e2e_hostile_bounds');
    const db = new pg.Client({ connectionString: databaseUrl });
    try {
      const r = await cli(['sync', '--once'], {
        SUPPORT_API_URL: proxy.url,
        SUPPORT_API_KEY: key,
        DESTINATION_URL: databaseUrl,
        TEMPORAL_ADDRESS: testTemporalAddress(),
        TEMPORAL_TASK_QUEUE: `hostile-bounds-${Date.now().toString(36)}`,
        SUPPORT_API_RATE_LIMITS: 'off',
        SYNC_THREAD_LOOKBACK: 'PT0S',
        SYNC_AUDIT_SHARE: '0',
        SYNC_MAX_PAGES: String(MAX_PAGES),
        // Without the depth guard first, the deep item's stack overflow is retried until this runs out.
        SYNC_SOURCE_PATIENCE: 'PT30S',
        LOG_LEVEL: 'warn',
      });
      const summary = summaryOf(r);
      console.info(
        `hostile bounds: exit ${r.code} after ${r.ms} ms, ${tagPages} tag pages, stderr ${r.stderr.length} chars`,
      );
      expect(r.code, r.stderr.slice(-3000)).toBe(1);
      expect(summary.status).toBe('failed');
      const statusOf = (s: string) => summary.streams[s]?.status;
      expect(statusOf('tags')).toBe('failed');
      expect(statusOf('teams')).toBe('failed');
      expect(statusOf('agents')).toBe('succeeded');
      expect(statusOf('views')).toBe('succeeded');
      expect(statusOf('tickets')).toBe('succeeded');
      const error = summary.error ?? '';
      expect(error).toMatch(
        new RegExp(
          `tags .*: ${MAX_PAGES} pages read and the API still says there are more \\(SYNC_MAX_PAGES`,
        ),
      );
      expect(error).toMatch(/200000 items, more than the request's limit \(\d+\): the page is refused whole/);
      // The endless list ended at the bound, its first page of the preflight aside.
      expect(tagPages).toBeLessThanOrEqual(MAX_PAGES + 1);
      // A few lines a page, never one per item of the 200,000.
      expect(r.stderr.length).toBeLessThan(200_000);

      await db.connect();
      const rejected = await db.query(
        "SELECT item_id, reason FROM support._rejected WHERE table_name = 'agents'",
      );
      expect(rejected.rows).toHaveLength(1);
      expect(rejected.rows[0].item_id).toBe('agent-deep');
      const stored = await db.query("SELECT count(*)::int AS n FROM support.views WHERE _raw ? '__proto__'");
      expect(stored.rows[0].n).toBe(1);
      const member = await db.query(
        "SELECT _raw -> '__proto__' AS proto FROM support.views WHERE _raw ? '__proto__'",
      );
      expect(member.rows[0].proto).toEqual({ polluted: true });
      // Kept cut at the depth cap: what `_rejected` holds can be walked and serialised.
      const cut = await db.query(
        "SELECT raw::text LIKE '%nested deeper than%' AS cut FROM support._rejected WHERE item_id = 'agent-deep'",
      );
      expect(cut.rows[0].cut).toBe(true);
    } finally {
      await db.end().catch(() => {});
      proxy.misbehave = null;
    }
  });

  it('a list that answers has_more with no items for ever ends long before SYNC_MAX_PAGES', async () => {
    let tagPages = 0;
    proxy.misbehave = ({ path, query }, res) => {
      if (path !== '/tags' || query.get('limit') === '1') return false;
      tagPages += 1;
      sendEmptyPageWithMore(res, `e${tagPages}`);
      return true;
    };
    const databaseUrl = await freshDatabase('e2e_hostile_empty_pages');
    try {
      const r = await cli(['sync', '--once', '--streams', 'tags,teams'], {
        SUPPORT_API_URL: proxy.url,
        SUPPORT_API_KEY: companion.keys.admin,
        DESTINATION_URL: databaseUrl,
        TEMPORAL_ADDRESS: testTemporalAddress(),
        TEMPORAL_TASK_QUEUE: `hostile-empty-${Date.now().toString(36)}`,
        SUPPORT_API_RATE_LIMITS: 'off',
        SYNC_AUDIT_SHARE: '0',
        LOG_LEVEL: 'warn',
      });
      const summary = summaryOf(r);
      expect(r.code, r.stderr.slice(-3000)).toBe(1);
      expect(summary.streams['tags']?.status).toBe('failed');
      expect(summary.streams['teams']?.status).toBe('succeeded');
      expect(summary.error ?? '').toMatch(
        new RegExp(`tags .*: ${MAX_EMPTY_PAGES_PER_SCOPE} pages read without a single item`),
      );
      expect(tagPages).toBeLessThanOrEqual(MAX_EMPTY_PAGES_PER_SCOPE + 1);
    } finally {
      proxy.misbehave = null;
    }
  });
});
