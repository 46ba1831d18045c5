/**
 * What one page costs the reader, by what the source sends: heap, peak memory and log lines per MiB of
 * page, through the real client (undici, the byte cap, JSON decoding, zod, the set-aside path, the logger)
 * against a local server. Each case runs in a fresh child process (`--expose-gc`), so one case's garbage
 * and peak never count for another.
 *
 *   npm run bench:page-memory
 *
 * Per case: `heap added` is the heap in use right after the page is read (no collection since) minus
 * before; `heap grown` is how much the heap's committed size grew (it does not shrink at once: close to the
 * peak); `peak RSS` is the process's maximum resident size minus what it was before the request. Figures
 * go to bench/RESULTS.md ("A page's memory, by what it sends").
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { getHeapStatistics } from 'node:v8';
import pino from 'pino';
import { SupportApiClient } from '../connectors/support-api/client.js';
import { fetchMetricCatalog, fetchTicketsPage } from '../connectors/support-api/paginate.js';
import { RateGovernor } from '../connectors/support-api/rate-governor.js';
import { Secret } from '../schemas/secret.js';
import { ticket } from '../test/destinations/fixtures.js';

const MiB = 1024 * 1024;
const PAGE_END = ',"pagination":{"has_more":false,"next_cursor":null}}';

/** Digits and commas up to about `bytes` (single digits: the most items a byte count can hold). */
function numbers(bytes: number): string {
  return `[${'1,'.repeat(Math.floor(bytes / 2) - 1)}1]`;
}

/** A ticket as the spec serves it, with 20 metadata values of 200 characters. */
function ticketJson(n: number): string {
  return JSON.stringify(
    ticket({
      ticket_number: n,
      metadata: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`field_${i}`, 'x'.repeat(200)])),
    }),
  );
}

interface Case {
  readonly name: string;
  readonly what: string;
  readonly body: () => string;
  /** `page`: a tickets page with limit 100; `catalog`: the unpaginated metric catalog (no limit). */
  readonly read: 'page' | 'catalog';
}

const CASES: readonly Case[] = [
  {
    name: 'numbers-12MB',
    what: 'a tickets page of six million numbers (12 MB), limit 100',
    body: () => `{"success":true,"data":${numbers(12_000_000)}${PAGE_END}`,
    read: 'page',
  },
  {
    name: 'numbers-1.9MiB',
    what: 'a tickets page of 1.9 MiB of numbers (1 million), limit 100',
    body: () => `{"success":true,"data":${numbers(1.9 * MiB)}${PAGE_END}`,
    read: 'page',
  },
  {
    name: 'catalog-numbers-1.9MiB',
    what: 'the unpaginated metric catalog: 1.9 MiB of numbers (1 million), refused by its item bound',
    body: () => `{"success":true,"data":${numbers(1.9 * MiB)}}`,
    read: 'catalog',
  },
  {
    name: 'catalog-numbers-12MB',
    what: 'the unpaginated metric catalog: six million numbers (12 MB), refused by its item bound',
    body: () => `{"success":true,"data":${numbers(12_000_000)}}`,
    read: 'catalog',
  },
  {
    name: 'tickets-100',
    what: 'a page of 100 tickets with 20 metadata values each (a real page, for comparison)',
    body: () =>
      `{"success":true,"data":[${Array.from({ length: 100 }, (_, i) => ticketJson(i + 1)).join(',')}]${PAGE_END}`,
    read: 'page',
  },
  {
    name: 'deep-10000',
    what: 'a page with one ticket breaking the schema, nested 10,000 levels deep',
    body: () =>
      `{"success":true,"data":[{"id":"t","x":${'['.repeat(10_000)}0${']'.repeat(10_000)}}]${PAGE_END}`,
    read: 'page',
  },
];

interface Measured {
  outcome: string;
  heapAddedMiB: number;
  heapGrownMiB: number;
  peakRssMiB: number;
  logLines: number;
  logBytes: number;
  ms: number;
}

/** In the child: one read of the page at `url`, measured. */
async function measure(read: Case['read'], baseUrl: string): Promise<Measured> {
  let logLines = 0;
  let logBytes = 0;
  const logger = pino(
    { level: 'warn' },
    {
      write: (line: string) => {
        logLines += 1;
        logBytes += line.length;
      },
    },
  );
  const client = new SupportApiClient({
    baseUrl,
    apiKey: new Secret('bench-key-0123456789'),
    logger,
    governor: new RateGovernor(),
    retry: { maxAttempts: 1 },
  });
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const committedBefore = getHeapStatistics().total_heap_size;
  const rssBefore = process.resourceUsage().maxRSS * 1024;
  const started = performance.now();
  let outcome: string;
  let held: unknown;
  try {
    held =
      read === 'page' ? await fetchTicketsPage(client, { limit: 100 }) : await fetchMetricCatalog(client);
    const page = held as { items: unknown[]; rejected: unknown[]; rejectedPastCap?: number };
    outcome = `${page.items.length} stored, ${page.rejected.length} kept set aside, ${page.rejectedPastCap ?? 0} counted`;
  } catch (err) {
    held = err;
    outcome = `refused: ${(err as Error).message.slice(0, 110)}`;
  }
  const ms = performance.now() - started;
  const heapAfter = process.memoryUsage().heapUsed;
  const committedAfter = getHeapStatistics().total_heap_size;
  const rssAfter = process.resourceUsage().maxRSS * 1024;
  await client.close();
  void held;
  return {
    outcome,
    heapAddedMiB: (heapAfter - heapBefore) / MiB,
    heapGrownMiB: (committedAfter - committedBefore) / MiB,
    peakRssMiB: (rssAfter - rssBefore) / MiB,
    logLines,
    logBytes,
    ms,
  };
}

async function runCase(c: Case): Promise<Measured & { pageMiB: number }> {
  const body = Buffer.from(c.body());
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const child = spawn(
      process.execPath,
      [
        '--expose-gc',
        '--import',
        'tsx',
        fileURLToPath(import.meta.url),
        '--child',
        c.read,
        `http://127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    if (code !== 0) throw new Error(`case ${c.name}: the child exited ${code}`);
    return { ...(JSON.parse(out.trim().split('\n').at(-1)!) as Measured), pageMiB: body.length / MiB };
  } finally {
    server.close();
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args[0] === '--child') {
    process.stdout.write(`${JSON.stringify(await measure(args[1] as Case['read'], args[2]!))}\n`);
    return;
  }
  const only = args[0];
  const f = (n: number) => n.toFixed(1);
  console.log(
    '| case | page MiB | heap added MiB (per MiB) | heap grown MiB (per MiB) | peak RSS MiB (per MiB) | log lines (bytes) | ms | outcome |',
  );
  console.log('|---|---|---|---|---|---|---|---|');
  for (const c of CASES) {
    if (only && c.name !== only) continue;
    const m = await runCase(c);
    const per = (x: number) => `${f(x)} (${f(x / m.pageMiB)})`;
    console.log(
      `| ${c.name}: ${c.what} | ${m.pageMiB.toFixed(2)} | ${per(m.heapAddedMiB)} | ${per(m.heapGrownMiB)} | ${per(m.peakRssMiB)} | ${m.logLines} (${m.logBytes}) | ${Math.round(m.ms)} | ${m.outcome} |`,
    );
  }
}

await main();
