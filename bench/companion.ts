/**
 * Companion benchmark: world generation time and memory (10k, 100k tickets), list-page / export-page latency
 * p50/p99 under concurrent load over real HTTP, and many small workspaces on one port (10, 100, 1,000 of 20–200
 * tickets): start-up time and memory, each count in a fresh process, and per workspace.
 * Run: npm run bench:companion (`-- --workspaces-only` for the last part, `--counts 10,100` to choose counts)
 */
import { execFileSync } from 'node:child_process';
import { request } from 'undici';
import { startCompanion, startWorkspaces, type WorkspaceOptions } from '../companion/index.js';
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

/** The n-th small workspace: 20–200 tickets, spread evenly by a stride coprime to the range. */
const smallWorkspace = (i: number): WorkspaceOptions => ({
  id: `ws-${i}`,
  seed: 1000 + i,
  tickets: 20 + ((i * 37) % 181),
  rateLimits: false,
});

/**
 * In a process of its own (so its RSS is its own): the heap and RSS a companion of `count` small workspaces
 * adds to the process, its start-up time, and one list request per workspace over HTTP.
 */
async function workspacesChild(count: number) {
  const specs = Array.from({ length: count }, (_, i) => smallWorkspace(i));
  gc?.();
  const before = process.memoryUsage();
  const t0 = performance.now();
  const fleet = await startWorkspaces({ workspaces: specs });
  const startMs = performance.now() - t0;
  gc?.();
  const after = process.memoryUsage();
  const times: number[] = [];
  const t1 = performance.now();
  for (const w of fleet.workspaces.values()) {
    const s = performance.now();
    const r = await request(`${fleet.baseUrl}/public/v1/tickets?limit=100`, {
      headers: { 'cx-api-key': w.keys.admin },
    });
    await r.body.text();
    if (r.statusCode !== 200) throw new Error(`${w.id}: HTTP ${r.statusCode}`);
    times.push(performance.now() - s);
  }
  const requestsMs = performance.now() - t1;
  const tickets = specs.reduce((sum, w) => sum + (w.tickets ?? 0), 0);
  await fleet.stop();
  process.stdout.write(
    `${JSON.stringify({
      count,
      tickets,
      startMs,
      heapMb: (after.heapUsed - before.heapUsed) / 1e6,
      rssMb: (after.rss - before.rss) / 1e6,
      rssTotalMb: after.rss / 1e6,
      p50: pct(times, 50),
      p99: pct(times, 99),
      requestsMs,
    })}\n`,
  );
}

function workspaces(counts: number[]) {
  console.log(
    'many workspaces on one port (each count in a fresh process; 20–200 tickets each, org B 40 more):',
  );
  for (const count of counts) {
    const out = execFileSync(
      process.execPath,
      ['--expose-gc', '--import', 'tsx', import.meta.filename, '--workspaces-child', String(count)],
      { encoding: 'utf8', maxBuffer: 1 << 20 },
    );
    const r = JSON.parse(out.trim().split('\n').at(-1) as string) as {
      count: number;
      tickets: number;
      startMs: number;
      heapMb: number;
      rssMb: number;
      rssTotalMb: number;
      p50: number;
      p99: number;
      requestsMs: number;
    };
    console.log(
      `  ${String(count).padStart(5)} workspaces (${r.tickets} tickets): start ${(r.startMs / 1000).toFixed(2)} s ` +
        `(${(r.startMs / count).toFixed(1)} ms each), heap +${r.heapMb.toFixed(0)} MB ` +
        `(${((r.heapMb * 1000) / count).toFixed(0)} kB each), RSS +${r.rssMb.toFixed(0)} MB ` +
        `(${((r.rssMb * 1000) / count).toFixed(0)} kB each, ${r.rssTotalMb.toFixed(0)} MB in all); ` +
        `GET /tickets?limit=100 once per workspace: p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`,
    );
  }
}

const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : (argv[i + 1] ?? '');
};
const child = flag('--workspaces-child');
const counts = (flag('--counts') ?? '10,100,1000').split(',').map(Number);
if (child !== undefined) {
  await workspacesChild(Number(child));
} else {
  if (!argv.includes('--workspaces-only')) await single();
  workspaces(counts);
}

async function single() {
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
}
