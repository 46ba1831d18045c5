import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { FRESH_STREAMS, FRESHNESS_STAMPS, freshTableOf } from '../../schemas/freshness.js';
import { STREAM_TABLE_NAMES } from '../../schemas/warehouse.js';
import type { StreamFreshness } from '../../worker/freshness.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';
import { type RewritingProxy, startRewritingProxy } from './rewriting-proxy.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The tables a sync of the companion's world fills: every stream's (no REPORT_QUERIES, no report snapshots). */
const TABLES = STREAM_TABLE_NAMES;

/** `support-sync <args>` as a user runs it, with exactly `env` as its configuration. */
function cli(args: string[], env: Record<string, string>) {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(SUPPORT_|DESTINATION_|TEMPORAL_|SYNC_|POSTGRES_|BIGQUERY_|ANALYTICS_|REPORT_)/.test(k),
    ),
  );
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'cli/main.ts', ...args], {
    cwd: ROOT,
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout!.setEncoding('utf8').on('data', (c: string) => (out.stdout += c));
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (out.stderr += c));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { child, out, exited };
}

/** The samples of a Prometheus text exposition: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const map = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) map.set(m[1]!, Number(m[2]));
  }
  return map;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Issue 23: the worker's Prometheus endpoint, scraped while a real sync runs (the CLI's `sync --once
 * --metrics-port`, the test's Temporal dev server, PostgreSQL, the companion over HTTP). The reconciliation's
 * report request — the run's last request, after every stream has settled — is held at a proxy until the
 * test has seen what it looks for, so the run is still going when it is scraped, however fast the machine.
 * One CSAT survey, the newest, breaks the spec (a score of 9) and is set aside: the warehouse then lags the
 * source by exactly the time between it and the newest survey stored, which both the metrics and `status`
 * must say.
 */
describe('the metrics endpoint during a sync', () => {
  let companion: CompanionHandle;
  let proxy: RewritingProxy;
  let databaseUrl: string;
  let db: pg.Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    companion = await startCompanion({ seed: 5, tickets: 40, rateLimits: false });
    proxy = await startRewritingProxy();
    proxy.target = companion.baseUrl;
    databaseUrl = await freshDatabase('e2e_metrics');
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    env = {
      SUPPORT_API_URL: proxy.url,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: `metrics-${Date.now().toString(36)}`,
      SUPPORT_API_RATE_LIMITS: 'off',
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    await db?.end();
    await proxy?.close();
    await companion?.stop();
  });

  it('reports rows written per table and a freshness value per stream while the run goes', async () => {
    const world = companion.world;
    const victim = world.surveys
      .filter((s) => s.orgId === world.orgA.id && world.tickets[s.ticketIdx]!.deletedAt === null)
      .sort((a, b) => b.sentAt - a.sentAt)[0]!;
    victim.score = 9; // outside 1–5: set aside in _rejected, the rest of its page stored
    const victimSentMs = Math.floor(victim.sentAt / 1000);

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // Reached when the reconciliation asks: every stream has settled, every page is written.
    let reached = false;
    proxy.gate = (method, path) => {
      if (method !== 'POST' || path !== '/reports/query') return null;
      reached = true;
      return held;
    };

    const sync = cli(['sync', '--once', '--metrics-port', '127.0.0.1:0'], env);
    try {
      let url: string | undefined;
      let metrics = new Map<string, number>();
      let text = '';
      const ready = () =>
        TABLES.every((t) => (metrics.get(`support_sync_rows_written_total{table="${t}"}`) ?? 0) > 0) &&
        FRESH_STREAMS.every((s) => metrics.has(`support_sync_freshness_lag_seconds{stream="${s}"}`));
      for (let exited = false; !exited && !(reached && ready()); ) {
        exited = await Promise.race([sync.exited.then(() => true), sleep(250).then(() => false)]);
        url ??= /^metrics: +(http:\S+)$/m.exec(sync.out.stderr)?.[1];
        if (!url) continue;
        text = await (await fetch(url)).text();
        metrics = samples(text);
      }
      expect(
        ready(),
        `the run ended before the endpoint showed every table and stream:\n${sync.out.stderr}`,
      ).toBe(true);

      for (const table of TABLES)
        expect(metrics.get(`support_sync_rows_written_total{table="${table}"}`), table).toBeGreaterThan(0);
      expect(metrics.get('support_sync_rejected_items_total{table="csat_surveys"}')).toBeGreaterThanOrEqual(
        1,
      );
      for (const routeClass of ['list', 'detail', 'analytics', 'directory'])
        expect(
          metrics.get(`support_sync_api_requests_total{route_class="${routeClass}"}`),
          routeClass,
        ).toBeGreaterThan(0);
      expect(metrics.get('support_sync_last_run_status{status="running"}')).toBe(1);
      expect(metrics.get('support_sync_windows_total{stream="tickets",status="succeeded"}')).toBe(1);
      expect(metrics.get('support_sync_freshness_slo_seconds')).toBe(7200);
      // The Temporal SDK's own metrics, on the same endpoint.
      expect(metrics.get('support_sync_temporal_runtime_metrics_up')).toBe(1);
      expect(text).toMatch(/^temporal_\w+/m);

      // Freshness per stream: both sides match what the source served and what the warehouse holds.
      for (const stream of FRESH_STREAMS) {
        const stamp = FRESHNESS_STAMPS[stream];
        const { rows } = await db.query(
          `SELECT MAX(${stamp}) AS newest FROM support.${freshTableOf(stream)}${stream === 'agent_sessions' ? '' : ' WHERE _deleted_at IS NULL'}`,
        );
        const warehouseMs = (rows[0].newest as Date).getTime();
        const at = (name: string) => metrics.get(`support_sync_${name}{stream="${stream}"}`);
        expect(at('warehouse_newest_timestamp_seconds'), stream).toBeCloseTo(warehouseMs / 1000, 3);
        if (stream === 'csat_surveys') {
          // The set-aside survey is the newest the source served; the warehouse has the one before it.
          expect(warehouseMs).toBeLessThan(victimSentMs);
          expect(at('source_newest_timestamp_seconds')).toBeCloseTo(victimSentMs / 1000, 3);
          expect(at('freshness_lag_seconds')).toBeCloseTo((victimSentMs - warehouseMs) / 1000, 3);
        } else {
          expect(at('source_newest_timestamp_seconds'), stream).toBeCloseTo(warehouseMs / 1000, 3);
          expect(at('freshness_lag_seconds'), stream).toBe(0);
        }
        expect(at('source_read_timestamp_seconds'), stream).toBeGreaterThan(0);
      }
    } finally {
      release();
      proxy.gate = null;
    }
    const code = await sync.exited;
    // Incomplete (3): the survey set aside is missing from the warehouse.
    expect(code, sync.out.stderr).toBe(3);
    expect(JSON.parse(sync.out.stdout.trim().split('\n').at(-1)!).status).toBe('incomplete');

    // status, from the warehouse alone: the same lag, over the default target of 2 h for CSAT only.
    const status = cli(['status', '--json'], env);
    expect(await status.exited, status.out.stderr).toBe(0);
    const report = JSON.parse(status.out.stdout) as {
      stream_freshness: { target_seconds: number; streams: StreamFreshness[] };
    };
    expect(report.stream_freshness.target_seconds).toBe(7200);
    const byStream = new Map(report.stream_freshness.streams.map((s) => [s.stream, s]));
    expect([...byStream.keys()]).toEqual(FRESH_STREAMS);
    const csat = byStream.get('csat_surveys')!;
    const { rows } = await db.query(
      'SELECT MAX(sent_at) AS newest FROM support.csat_surveys WHERE _deleted_at IS NULL',
    );
    expect(csat.source_newest).toBe(new Date(victimSentMs).toISOString());
    expect(csat.lag_seconds).toBeCloseTo((victimSentMs - (rows[0].newest as Date).getTime()) / 1000, 3);
    expect(csat).toMatchObject({ over_slo: true, reasons: ['lag'] });
    for (const stream of ['tickets', 'ticket_messages', 'agent_sessions'] as const)
      expect(byStream.get(stream), stream).toMatchObject({ lag_seconds: 0, over_slo: false, reasons: [] });

    const text = cli(['status'], env);
    expect(await text.exited).toBe(0);
    expect(text.out.stdout).toContain(
      'Freshness against the target of 2 h (SYNC_FRESHNESS_SLO): 1 over it (csat_surveys)',
    );
    expect(text.out.stdout).toMatch(/^ {2}csat_surveys +sent_at .* OVER \(lag\)$/m);
  });
});
