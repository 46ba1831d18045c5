/**
 * Benchmark: achieved request rate per route class as a ratio of the server's limit, and 429s, for the
 * support-api client alone on its key against the companion with a compressed rate-limit window.
 *
 *   npm run bench:client -- [--seconds 20] [--window-ms 2000] [--workers 3]
 *
 * Every class runs at the same time (classes are independent budgets) with `--workers` concurrent callers
 * per class sharing the client's governor. The ratio counts accepted requests inside whole server windows
 * (the companion's windows are aligned to multiples of the window length) between the first and last
 * complete window of the run: accepted / (limit × windows).
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { startCompanion } from '../companion/index.js';
import { fetchCsatPage, fetchTagsPage, fetchTicketsPage } from '../connectors/support-api/paginate.js';
import { RateGovernor } from '../connectors/support-api/rate-governor.js';
import type { RouteClass } from '../connectors/support-api/route-classes.js';
import { Secret } from '../schemas/secret.js';
import { WritingApiClient } from '../test/support/api-writes.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    'window-ms': { type: 'string', default: '2000' },
    workers: { type: 'string', default: '3' },
  },
});
const seconds = Number(values.seconds);
const windowMs = Number(values['window-ms']);
const workers = Number(values.workers);

const limits: Partial<Record<RouteClass, number>> = {
  list: 20,
  detail: 40,
  write: 10,
  analytics: 10,
  directory: 20,
  ticket_update: 10,
  attachments: 10,
};

const handle = await startCompanion({
  seed: 42,
  tickets: 200,
  rateLimits: true,
  rateLimitWindowMs: windowMs,
  rateLimitOverrides: limits,
  logLevel: 'silent',
});
const client = new WritingApiClient({
  baseUrl: handle.baseUrl,
  apiKey: new Secret(handle.keys.admin),
  governor: new RateGovernor(),
  logger: pino({ level: 'error' }),
});
const ticketNumbers = handle.world.tickets
  .filter((t) => t.orgId === handle.world.orgA.id && t.deletedAt === null)
  .map((t) => t.number);
const channel = handle.world.orgA.channels[0]!.type;
let n = 0;
const pick = () => ticketNumbers[n++ % ticketNumbers.length]!;

const calls: Record<string, () => Promise<unknown>> = {
  list: () => fetchTicketsPage(client, { limit: 5 }),
  detail: () => client.getTicket(pick()),
  write: () => client.createTicket({ channel, subject: 'bench' }),
  analytics: () =>
    fetchCsatPage(client, {
      by: 'sent',
      from: '2025-01-01T00:00:00Z',
      before: '2025-03-01T00:00:00Z',
      limit: 5,
    }),
  directory: () => fetchTagsPage(client, { limit: 5 }),
  ticket_update: () => client.updateTicket(pick(), { priority: n % 2 === 0 ? 'high' : 'low' }),
  attachments: () => client.createUploadUrl({ file_name: 'a.txt', mime_type: 'text/plain', size: 10 }),
};

const start = Date.now();
const deadline = start + seconds * 1000;
const errors: Record<string, number> = {};
await Promise.all(
  Object.entries(calls).flatMap(([cls, call]) =>
    Array.from({ length: workers }, async () => {
      while (Date.now() < deadline) {
        try {
          await call();
        } catch (err) {
          errors[cls] = (errors[cls] ?? 0) + 1;
          if (errors[cls] === 1) console.error(cls, String(err));
        }
      }
    }),
  ),
);
const end = Date.now();

const t0 = Math.ceil(start / windowMs) * windowMs + windowMs; // skip the probe window
const t1 = Math.floor(end / windowMs) * windowMs;
const whole = (t1 - t0) / windowMs;
const rows = Object.keys(calls).map((cls) => {
  const entries = handle.requestLog.filter((e) => e.routeClass === cls);
  const inSpan = entries.filter((e) => {
    const at = Date.parse(e.at);
    return at >= t0 && at < t1;
  });
  const accepted = inSpan.filter((e) => e.status < 400).length;
  const limit = limits[cls as RouteClass]!;
  const stats = client.governor.classStats(cls as RouteClass);
  return {
    class: cls,
    limit: `${limit}/${windowMs}ms`,
    requests: entries.length,
    windows: whole,
    'accepted in windows': accepted,
    ratio: Number((accepted / (limit * whole)).toFixed(3)),
    '429s': entries.filter((e) => e.status === 429).length,
    waits: stats.waits,
    'wait ms (sum of callers)': Math.round(stats.totalWaitMs),
    errors: errors[cls] ?? 0,
  };
});
console.log(
  `client-rate: ${seconds} s, window ${windowMs} ms, ${workers} workers per class, classes concurrently`,
);
console.table(rows);
const minRatio = Math.min(...rows.map((r) => r.ratio));
const total429 = rows.reduce((a, r) => a + r['429s'], 0);
console.log(
  JSON.stringify({
    minRatio,
    total429,
    target: { ratio: 0.95, '429s': 0 },
    pass: minRatio >= 0.95 && total429 === 0,
  }),
);
await client.close();
await handle.stop();
