/**
 * PostgreSQL upsert throughput: the destination's writeTables (validate → COPY into staging → merge by id
 * with the version rule → checkpoint, one transaction per batch) against a plain COPY of the same rows into
 * an empty table with the same definition (columns, primary key, BI indexes), measured in the same run.
 *
 *   npm run bench:postgres                 # 10k and 200k rows, embedded PostgreSQL
 *   npm run bench:postgres -- 10000        # chosen sizes
 *   DATABASE_URL=postgres://… npm run bench:postgres
 *
 * Phases per size: plain COPY (baseline), first load (empty target), re-upsert of the same rows (no
 * change: only `_synced_at` is refreshed), re-upsert with every row newer (full update). Rows are generated
 * batch by batch from a seed, so memory reflects the destination, not the fixture. Target: ≥ 0.5 × COPY.
 */
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { stagedColumns } from '../connectors/batch.js';
import { copyLine } from '../connectors/postgres/copy.js';
import { createTableSql, indexSql } from '../connectors/postgres/ddl.js';
import { PostgresDestination } from '../connectors/postgres/destination.js';
import { startEmbeddedPostgres } from '../embedded/postgres.js';
import type { Ticket } from '../schemas/api/index.js';
import { type ApiRowInput, TABLES, toValidatedRows } from '../schemas/warehouse.js';

const SIZES = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const sizes = SIZES.length > 0 ? SIZES : [10_000, 200_000];
const BATCH = 10_000;

const WORDS =
  'order refund shipping damaged replacement invoice account password login delivery late missing'.split(' ');

/** A ticket-sized item (~1.3 kB of JSON) derived from its index: deterministic, no shared state. */
function makeTicket(i: number, generation: number): ApiRowInput<Ticket> {
  const w = (k: number) => WORDS[(i * 7 + k * 13) % WORDS.length]!;
  const hex = i.toString(16).padStart(12, '0');
  const item: Ticket = {
    id: `00000000-0000-4000-8000-${hex}`,
    ticket_number: i + 1,
    subject: `${w(1)} ${w(2)} — customer reports ${w(3)} ${w(4)} for order #${100000 + i}, needs help ${w(5)}`,
    status: (['open', 'need_more_info', 'resolved', 'closed'] as const)[i % 4]!,
    priority: (['none', 'urgent', 'high', 'medium', 'low'] as const)[i % 5]!,
    channel: (['email', 'widget', 'whatsapp', 'voice'] as const)[i % 4]!,
    created_at: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(),
    updated_at: new Date(Date.UTC(2024, 0, 1) + i * 60_000 + generation * 86_400_000).toISOString(),
    tags: [w(6), w(7), 'vip'],
    contact: {
      id: `11111111-0000-4000-8000-${hex}`,
      email: `customer.${i}@example.com`,
      first_name: 'Customer',
      last_name: `Number ${i}`,
      phone: `+33 6 ${String(i).padStart(8, '0')}`,
    },
    ticket_type: 'regular',
    parent_ticket_id: null,
    assignee_id: `agent_${i % 50}`,
    team_id: `team_${i % 8}`,
    language: 'en',
    is_spam: false,
    resolved_at: i % 4 >= 2 ? new Date(Date.UTC(2024, 0, 2) + i * 60_000).toISOString() : null,
    ticket_fields: [
      { field_id: 'f_order', name: 'Order id', type: 'text', value: String(100000 + i) },
      { field_id: 'f_items', name: 'Items', type: 'multi_select', value: [w(8), w(9)] },
      { field_id: 'f_value', name: 'Order value', type: 'number', value: (i % 1000) + 0.99 },
      { field_id: 'f_note', name: 'Internal note', type: 'text', value: `${w(10)} `.repeat(40) },
    ],
  };
  return { item, raw: item };
}

function* batches(n: number, generation: number) {
  for (let start = 0; start < n; start += BATCH) {
    const rows: ApiRowInput<Ticket>[] = [];
    for (let i = start; i < Math.min(n, start + BATCH); i++) rows.push(makeTicket(i, generation));
    yield rows;
  }
}

let peakRss = 0;
const sampler = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 20);
sampler.unref();

async function measure(fn: () => Promise<void>): Promise<{ seconds: number; peakMb: number }> {
  global.gc?.();
  peakRss = process.memoryUsage().rss;
  const t0 = performance.now();
  await fn();
  const seconds = (performance.now() - t0) / 1000;
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  return { seconds, peakMb: peakRss / 1024 / 1024 };
}

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);
const embedded = process.env['DATABASE_URL'] ? undefined : await startEmbeddedPostgres({ log });
const adminUrl = process.env['DATABASE_URL'] ?? embedded!.url;
const admin = new pg.Client({ connectionString: adminUrl });
await admin.connect();
const dbName = `bench_${Date.now()}`;
await admin.query(`CREATE DATABASE ${dbName}`);
const url = new URL(adminUrl);
url.pathname = `/${dbName}`;
const db = new pg.Client({ connectionString: url.toString() });
await db.connect();

const spec = TABLES.tickets;
const cols = stagedColumns(spec);
const results: string[][] = [];

try {
  // Warm-up (JIT, zod, pg): not measured.
  {
    const warm = new PostgresDestination(url.toString(), { schema: 'bench_warmup' });
    await warm.prepare();
    for (const rows of batches(BATCH, 0)) await warm.writeTables([{ table: 'tickets', rows }]);
    await warm.close();
  }
  for (const n of sizes) {
    const schema = `bench_${n}`;
    // Baseline: plain COPY into an empty table with the same definition.
    await db.query(`CREATE SCHEMA ${schema}`);
    await db.query(createTableSql(schema, 'tickets_copy', spec.columns, spec.primaryKey));
    for (const index of spec.indexes) await db.query(indexSql(schema, 'tickets_copy', index));
    const copyCols = [...cols.map((c) => c.name), '_synced_at'];
    const now = new Date().toISOString();
    const baseline = await measure(async () => {
      const copy = db.query(
        copyFrom(`COPY ${schema}.tickets_copy (${copyCols.join(', ')}) FROM STDIN (FORMAT text)`),
      );
      async function* lines() {
        for (const batch of batches(n, 0)) {
          const rows = toValidatedRows('tickets', batch);
          let chunk = '';
          for (const row of rows) chunk += `${copyLine(cols, row).slice(0, -1)}\t${now}\n`;
          yield Buffer.from(chunk);
        }
      }
      await pipeline(Readable.from(lines()), copy);
    });
    const dest = new PostgresDestination(url.toString(), { schema });
    await dest.prepare();
    const run = (generation: number) =>
      measure(async () => {
        let page = 0;
        for (const rows of batches(n, generation)) {
          page++;
          await dest.writeTables([
            {
              table: 'tickets',
              rows,
              checkpoint: {
                stream: 'bench',
                scope: String(n),
                cursor: String(page),
                high_water_mark: null,
                status: 'running',
                pages: page,
                rows: page * BATCH,
              },
            },
          ]);
        }
      });
    const first = await run(0);
    const again = await run(0);
    const newer = await run(1);
    await dest.close();
    const rate = (s: number) => Math.round(n / s);
    const row = (label: string, m: { seconds: number; peakMb: number }) => [
      String(n),
      label,
      m.seconds.toFixed(2),
      rate(m.seconds).toLocaleString('en'),
      (baseline.seconds / m.seconds).toFixed(2),
      m.peakMb.toFixed(0),
    ];
    results.push(row('plain COPY (baseline)', baseline));
    results.push(row('upsert: first load', first));
    results.push(row('upsert: same rows again', again));
    results.push(row('upsert: all rows newer', newer));
    log(`${n} rows done`);
  }
} finally {
  await db.end();
  await admin.query(`DROP DATABASE IF EXISTS ${dbName}`).catch(() => undefined);
  await admin.end();
  await embedded?.stop();
}

const header = ['rows', 'phase', 'seconds', 'rows/s', 'ratio vs COPY', 'peak RSS MB'];
const widths = header.map((h, i) => Math.max(h.length, ...results.map((r) => r[i]!.length)));
const fmt = (r: string[]) =>
  r.map((v, i) => (i <= 1 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
console.log(
  `PostgreSQL upsert vs plain COPY (ticket rows, ${BATCH.toLocaleString('en')} rows per writeTables; target ratio ≥ 0.5)`,
);
console.log(fmt(header));
for (const r of results) console.log(fmt(r));
