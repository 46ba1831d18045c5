/**
 * Companion benchmark: world generation time and memory (10k, 100k tickets), and list-page / export-page
 * latency p50/p99 under concurrent load over real HTTP. Run: npm run bench:companion
 */
import { request } from 'undici';
import { startCompanion } from '../companion/index.js';
import { generateWorld } from '../companion/world/index.js';

const gc = (globalThis as { gc?: () => void }).gc;

function generation(n: number) {
  gc?.();
  const before = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const data = generateWorld(7, n, Date.now());
  const ms = performance.now() - t0;
  gc?.();
  const mb = (process.memoryUsage().heapUsed - before) / 1e6;
  console.log(
    `generate ${n} tickets: ${ms.toFixed(0)} ms, ~${mb.toFixed(0)} MB heap${gc ? '' : ' (run with --expose-gc for exact memory)'}, ${data.messages.length} messages, ${data.events.length} events, ${data.surveys.length} surveys, ${data.sessions.length} sessions`,
  );
  return data.tickets.length;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
}

async function load(name: string, url: () => string, key: string, concurrency: number, total: number) {
  const times: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const s = performance.now();
        const r = await request(url(), { headers: { 'cx-api-key': key } });
        await r.body.text();
        if (r.statusCode !== 200) throw new Error(`${name}: HTTP ${r.statusCode}`);
        times.push(performance.now() - s);
      }
    }),
  );
  const wall = (performance.now() - t0) / 1000;
  console.log(
    `${name}: ${total} requests, concurrency ${concurrency}: p50 ${pct(times, 50).toFixed(1)} ms, p99 ${pct(times, 99).toFixed(1)} ms, ${(total / wall).toFixed(0)} req/s`,
  );
}

generation(10_000);
generation(100_000);

const h = await startCompanion({ tickets: 100_000, rateLimits: false });
try {
  const base = `${h.baseUrl}/public/v1`;
  // Deep pages: cursors from a crawl so later pages are measured too.
  const cursors: string[] = [''];
  for (let i = 0; i < 50; i++) {
    const r = await request(`${base}/tickets?limit=100${cursors[i] ? `&cursor=${cursors[i]}` : ''}`, {
      headers: { 'cx-api-key': h.keys.admin },
    });
    const body = (await r.body.json()) as { pagination: { next_cursor: string | null } };
    if (!body.pagination.next_cursor) break;
    cursors.push(body.pagination.next_cursor);
  }
  let i = 0;
  await load(
    'GET /tickets?limit=100 (100k world)',
    () =>
      `${base}/tickets?limit=100${(() => {
        const c = cursors[i++ % cursors.length];
        return c ? `&cursor=${c}` : '';
      })()}`,
    h.keys.admin,
    16,
    2000,
  );
  const before = new Date().toISOString();
  const from = new Date(Date.now() - 90 * 24 * 3600_000).toISOString();
  await load(
    'GET /csat-surveys 90-day window, limit=100',
    () => `${base}/csat-surveys?sent_from=${from}&sent_before=${before}&limit=100`,
    h.keys.admin,
    16,
    1000,
  );
  await load(
    'GET /agent-sessions 90-day window, limit=100',
    () => `${base}/agent-sessions?from=${from}&before=${before}&limit=100`,
    h.keys.admin,
    16,
    1000,
  );
} finally {
  await h.stop();
}
