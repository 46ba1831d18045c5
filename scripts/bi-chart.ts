/**
 * Renders the BI guide's picture from a warehouse: per UTC day, new tickets and resolutions (bars) and the
 * open backlog at the day's end (line), from the views current_tickets, ticket_resolutions and
 * ticket_daily_backlog — an SVG written by hand (no plotting library: the picture is three series).
 *
 *   npx tsx scripts/bi-chart.ts [--days 30] [--out docs/guides/bi-daily.svg]
 *
 * Reads DESTINATION_URL (a postgres:// URL; DESTINATION_SCHEMA, default `support`), or else the demo's
 * embedded warehouse in .data/postgres (stop `npm start` first: one server per data directory).
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { DATA_DIR } from '../embedded/data-dir.js';
import { embeddedWarehouse } from '../embedded/warehouse.js';
import { createLogger } from '../worker/logger.js';

export interface DailyPoint {
  day: string;
  created: number;
  resolved: number;
  /** Null before the warehouse's first sync: the backlog of those days is not known whole. */
  backlog: number | null;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The chart as SVG text: bars for created and resolved per day, a line for the backlog at the day's end. */
export function dailyChartSvg(points: readonly DailyPoint[], title: string): string {
  const W = 900;
  const H = 420;
  const m = { left: 56, right: 24, top: 48, bottom: 70 };
  const plotW = W - m.left - m.right;
  const plotH = H - m.top - m.bottom;
  const max = Math.max(1, ...points.flatMap((p) => [p.created, p.resolved, p.backlog ?? 0]));
  const step = niceStep(max);
  const top = Math.ceil(max / step) * step;
  const y = (v: number) => m.top + plotH - (v / top) * plotH;
  const slot = plotW / Math.max(1, points.length);
  const bar = Math.max(1, slot * 0.35);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<title>${esc(title)}: new tickets and resolutions per day (bars), open tickets at the end of the day (line)</title>`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${m.left}" y="24" font-size="16" font-weight="bold">${esc(title)}</text>`,
  ];
  for (let v = 0; v <= top; v += step) {
    out.push(
      `<line x1="${m.left}" x2="${W - m.right}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e5e5"/>`,
      `<text x="${m.left - 8}" y="${y(v) + 4}" text-anchor="end" fill="#555">${v}</text>`,
    );
  }
  points.forEach((p, i) => {
    const x = m.left + i * slot + slot / 2;
    out.push(
      `<rect x="${x - bar}" y="${y(p.created)}" width="${bar}" height="${y(0) - y(p.created)}" fill="#4e79a7"><title>${p.day}: ${p.created} new</title></rect>`,
      `<rect x="${x}" y="${y(p.resolved)}" width="${bar}" height="${y(0) - y(p.resolved)}" fill="#59a14f"><title>${p.day}: ${p.resolved} resolved</title></rect>`,
    );
    if (i % Math.ceil(points.length / 10) === 0)
      out.push(
        `<text x="${x}" y="${H - m.bottom + 16}" text-anchor="end" transform="rotate(-40 ${x} ${H - m.bottom + 16})" fill="#555">${p.day}</text>`,
      );
  });
  const known = points.flatMap((p, i) =>
    p.backlog === null ? [] : [[m.left + i * slot + slot / 2, y(p.backlog), p] as const],
  );
  out.push(
    `<polyline points="${known.map(([x, yy]) => `${x},${yy}`).join(' ')}" fill="none" stroke="#e15759" stroke-width="2.5"/>`,
    ...known.map(
      ([x, yy, p]) =>
        `<circle cx="${x}" cy="${yy}" r="3.5" fill="#e15759"><title>${p.day}: ${p.backlog} open</title></circle>`,
    ),
  );
  const legend: [string, string][] = [
    ['#4e79a7', 'new tickets'],
    ['#59a14f', 'resolved (ticket_resolutions)'],
    ['#e15759', 'open at the end of the day, from the first sync on (ticket_daily_backlog)'],
  ];
  legend.forEach(([color, label], i) => {
    const lx = m.left + i * 230;
    out.push(
      `<rect x="${lx}" y="${H - 22}" width="12" height="12" fill="${color}"/>`,
      `<text x="${lx + 18}" y="${H - 12}">${esc(label)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function niceStep(max: number): number {
  const raw = max / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((k) => k * p).find((s) => s >= raw) ?? 10 * p;
}

/** The daily series of the last `days` UTC days, today included, from the views. */
export async function dailyPoints(client: pg.Client, schema: string, days: number): Promise<DailyPoint[]> {
  const q = (name: string) => `"${schema}"."${name}"`;
  const r = await client.query(
    `WITH d AS (
       SELECT to_char(g AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day
       FROM generate_series(date_trunc('day', now() AT TIME ZONE 'UTC') - ($1::int - 1) * interval '1 day',
         date_trunc('day', now() AT TIME ZONE 'UTC'), interval '1 day') AS g
     )
     SELECT d.day,
       (SELECT count(*) FROM ${q('current_tickets')} t WHERE to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') = d.day)::int AS created,
       (SELECT count(DISTINCT r.ticket_id) FROM ${q('ticket_resolutions')} r JOIN ${q('current_tickets')} t ON t.id = r.ticket_id
         WHERE to_char(r.resolved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') = d.day)::int AS resolved,
       (SELECT b.open_tickets FROM ${q('ticket_daily_backlog')} b WHERE b.day = d.day AND b.complete)::int AS backlog
     FROM d ORDER BY d.day`,
    [days],
  );
  return r.rows as DailyPoint[];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      days: { type: 'string', default: '30' },
      out: { type: 'string', default: 'docs/guides/bi-daily.svg' },
    },
  });
  let url = process.env['DESTINATION_URL'];
  const schema = process.env['DESTINATION_SCHEMA'] ?? 'support';
  let embedded: Awaited<ReturnType<typeof embeddedWarehouse>> | undefined;
  if (!url) {
    if (!existsSync(join(DATA_DIR, 'postgres', 'PG_VERSION')))
      throw new Error(
        'no DESTINATION_URL and no demo warehouse in .data/postgres: run `npm start -- --once` first',
      );
    embedded = await embeddedWarehouse(createLogger('warn'));
    url = embedded.url;
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const points = await dailyPoints(client, schema, Number(values.days));
    await writeFile(values.out!, dailyChartSvg(points, `Tickets per day, last ${values.days} days (UTC)`));
    process.stdout.write(`wrote ${values.out} (${points.length} days)\n`);
  } finally {
    await client.end();
    await embedded?.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
