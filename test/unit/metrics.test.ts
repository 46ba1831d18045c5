import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseMetricsAddress } from '../../cli/arguments.js';
import type { Bookkeeping } from '../../connectors/destination.js';
import type { RateClassStats } from '../../connectors/support-api/index.js';
import type { FreshStream } from '../../schemas/freshness.js';
import type { SyncRunRecord } from '../../schemas/warehouse.js';
import { WorkspaceId } from '../../schemas/workspaces.js';
import { syncMetricsOf } from '../../worker/compose.js';
import { type ConfigError, loadConfig } from '../../worker/config.js';
import { type MetricsSources, OTHER_WORKSPACES, SyncMetrics, WorkspaceLabels } from '../../worker/metrics.js';
import { type MetricsEndpoint, serveMetrics } from '../../worker/metrics-endpoint.js';

const silent = pino({ level: 'silent' });
const T = Date.parse('2026-06-01T12:00:00Z');
const HOUR = 3_600_000;
/** Metrics over sources a test controls: the governor's counters, bookkeeping's answer, the clock. */
function metricsWith(over: Partial<MetricsSources> = {}) {
  const state = {
    now: T,
    openSetAside: new Set<FreshStream>(),
    bookkeepingReads: 0,
    stats: [] as RateClassStats[],
  };
  const metrics = new SyncMetrics({
    rateStats: () => state.stats,
    openSetAside: async () => {
      state.bookkeepingReads += 1;
      return new Set(state.openSetAside);
    },
    freshnessSloMs: 2 * HOUR,
    logger: silent,
    now: () => state.now,
    ...over,
  });
  return { metrics, state };
}

/** The value of one sample of the exposition text, or undefined when the series is absent. */
async function sample(metrics: SyncMetrics, series: string): Promise<number | undefined> {
  const text = await metrics.registry.metrics();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const run = (over: Partial<SyncRunRecord>): SyncRunRecord => ({
  run_id: 'r1',
  parent_run_id: null,
  workflow_id: 'sync-run/r1',
  stream: null,
  window_start: null,
  window_end: null,
  mode: 'incremental',
  status: 'running',
  started_at: '2026-06-01T11:00:00.000Z',
  finished_at: null,
  pages: 0,
  rows_written: 0,
  requests: 0,
  error: null,
  ...over,
});

describe('the sync metrics (worker/metrics.ts)', () => {
  it('count rows written and items set aside per table, pages per stream', async () => {
    const { metrics } = metricsWith();
    metrics.pageRead('tickets', null);
    metrics.rowsWritten({ stream: 'tickets', table: 'tickets', rows: 40, rejected: 1, newestMs: null });
    metrics.pageRead('tickets', null);
    metrics.rowsWritten({ stream: 'tickets', table: 'tickets', rows: 2, rejected: 0, newestMs: null });
    metrics.rowsWritten({
      stream: 'report_snapshots',
      table: 'report_snapshot_values',
      rows: 7,
      rejected: 0,
      newestMs: null,
    });
    expect(await sample(metrics, 'support_sync_rows_written_total{table="tickets"}')).toBe(42);
    expect(await sample(metrics, 'support_sync_rows_written_total{table="report_snapshot_values"}')).toBe(7);
    expect(await sample(metrics, 'support_sync_rejected_items_total{table="tickets"}')).toBe(1);
    expect(await sample(metrics, 'support_sync_pages_read_total{stream="tickets"}')).toBe(2);
    expect(await sample(metrics, 'support_sync_source_read_timestamp_seconds{stream="tickets"}')).toBe(
      T / 1000,
    );
  });

  it('count windows and runs once each, however often a retried activity records them', async () => {
    const { metrics } = metricsWith();
    const window = run({ run_id: 'r1:w1:a', parent_run_id: 'r1', stream: 'agent_sessions' });
    metrics.runRecorded(run({}));
    metrics.runRecorded(window);
    expect(await sample(metrics, 'support_sync_last_run_status{status="running"}')).toBe(1);
    metrics.runRecorded({ ...window, status: 'failed', finished_at: '2026-06-01T11:10:00.000Z' });
    metrics.runRecorded({ ...window, status: 'failed', finished_at: '2026-06-01T11:10:00.000Z' });
    metrics.runRecorded({ ...window, run_id: 'r1:w1:b', status: 'succeeded' });
    const finished = run({ status: 'incomplete', finished_at: '2026-06-01T11:30:00.000Z' });
    metrics.runRecorded(finished);
    metrics.runRecorded(finished);
    expect(await sample(metrics, 'support_sync_windows_total{stream="agent_sessions",status="failed"}')).toBe(
      1,
    );
    expect(
      await sample(metrics, 'support_sync_windows_total{stream="agent_sessions",status="succeeded"}'),
    ).toBe(1);
    expect(await sample(metrics, 'support_sync_runs_total{mode="incremental",status="incomplete"}')).toBe(1);
    expect(await sample(metrics, 'support_sync_last_run_status{status="running"}')).toBe(0);
    expect(await sample(metrics, 'support_sync_last_run_status{status="incomplete"}')).toBe(1);
    expect(await sample(metrics, 'support_sync_run_finished_timestamp_seconds{status="incomplete"}')).toBe(
      Date.parse('2026-06-01T11:30:00.000Z') / 1000,
    );
  });

  it("mirror the rate governor's requests, 429s and waits per route class", async () => {
    const { metrics, state } = metricsWith();
    const stats = (routeClass: RateClassStats['routeClass'], requests: number): RateClassStats => ({
      routeClass,
      requests,
      responses: requests,
      rateLimited: routeClass === 'detail' ? 3 : 0,
      waits: 5,
      totalWaitMs: 2500,
      limit: undefined,
      remaining: undefined,
      resetAt: undefined,
      windowMs: 60_000,
      inFlight: 0,
      pausedUntil: undefined,
    });
    state.stats = [stats('detail', 120), stats('write', 0)];
    expect(await sample(metrics, 'support_sync_api_requests_total{route_class="detail"}')).toBe(120);
    expect(await sample(metrics, 'support_sync_api_rate_limited_total{route_class="detail"}')).toBe(3);
    expect(await sample(metrics, 'support_sync_rate_limit_waits_total{route_class="detail"}')).toBe(5);
    expect(await sample(metrics, 'support_sync_rate_limit_wait_seconds_total{route_class="detail"}')).toBe(
      2.5,
    );
    // Every class the sync reads is there from the start (rate() needs a zero); a class it never used is not.
    expect(await sample(metrics, 'support_sync_api_requests_total{route_class="list"}')).toBe(0);
    expect(await sample(metrics, 'support_sync_api_requests_total{route_class="write"}')).toBeUndefined();
    state.stats = [stats('detail', 130)];
    expect(await sample(metrics, 'support_sync_api_requests_total{route_class="detail"}')).toBe(130);
  });

  it('freshness: the newest stamp the reader saw minus the newest the warehouse holds, per stream', async () => {
    const { metrics } = metricsWith();
    expect(await sample(metrics, 'support_sync_freshness_slo_seconds')).toBe(7200);
    // Nothing read or written yet: neither side is known, no lag to tell.
    expect(
      await sample(metrics, 'support_sync_freshness_lag_seconds{stream="csat_surveys"}'),
    ).toBeUndefined();
    // A page served surveys up to T − 1 h (an item it set aside included).
    metrics.pageRead('csat_surveys', T - 1 * HOUR);
    expect(await sample(metrics, 'support_sync_source_newest_timestamp_seconds{stream="csat_surveys"}')).toBe(
      (T - HOUR) / 1000,
    );
    // Its stored items, up to T − 2 h, are committed: the lag is what was set aside.
    metrics.rowsWritten({
      stream: 'csat_surveys',
      table: 'csat_surveys',
      rows: 9,
      rejected: 1,
      newestMs: T - 2 * HOUR,
      setAsideNewestMs: T - HOUR,
    });
    expect(
      await sample(metrics, 'support_sync_warehouse_newest_timestamp_seconds{stream="csat_surveys"}'),
    ).toBe((T - 2 * HOUR) / 1000);
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="csat_surveys"}')).toBe(3600);
    // An older page later does not move the source's side back.
    metrics.pageRead('csat_surveys', T - 30 * HOUR);
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="csat_surveys"}')).toBe(3600);
    // A stream without a stamp has a read time, no freshness.
    metrics.pageRead('views', null);
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="views"}')).toBeUndefined();
  });

  it('an item set aside counts as stored once bookkeeping holds none of its stream set aside, asked at most once a minute', async () => {
    const { metrics, state } = metricsWith();
    // Nothing set aside: bookkeeping is not asked at all.
    metrics.pageRead('tickets', T);
    metrics.rowsWritten({ stream: 'tickets', table: 'tickets', rows: 3, rejected: 0, newestMs: T });
    await metrics.registry.metrics();
    expect(state.bookkeepingReads).toBe(0);
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="tickets"}')).toBe(0);

    metrics.pageRead('csat_surveys', T - HOUR);
    metrics.rowsWritten({
      stream: 'csat_surveys',
      table: 'csat_surveys',
      rows: 4,
      rejected: 1,
      newestMs: T - 3 * HOUR,
      setAsideNewestMs: T - HOUR,
    });
    state.openSetAside = new Set(['csat_surveys']);
    await metrics.registry.metrics();
    await metrics.registry.metrics();
    expect(state.bookkeepingReads).toBe(1);
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="csat_surveys"}')).toBe(2 * 3600);
    // Stored since by another process: bookkeeping holds none open. An answer that may predate the merge of
    // this process's own set-aside (BigQuery merges staged rows within a flush interval) is not trusted.
    state.openSetAside = new Set();
    state.now = T + 61_000;
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="csat_surveys"}')).toBe(2 * 3600);
    expect(state.bookkeepingReads).toBe(2);
    state.now = T + 16 * 60_000;
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="csat_surveys"}')).toBe(0);
    expect(
      await sample(metrics, 'support_sync_warehouse_newest_timestamp_seconds{stream="csat_surveys"}'),
    ).toBe((T - HOUR) / 1000);
    expect(state.bookkeepingReads).toBe(3);
    // Nothing of this process is set aside any more: no more reads.
    state.now = T + 30 * 60_000;
    await metrics.registry.metrics();
    expect(state.bookkeepingReads).toBe(3);
  });
});

describe("the worker's metrics read freshness from bookkeeping (worker/compose.ts syncMetricsOf)", () => {
  it('never query a data table: one read of the items set aside, whatever is scraped', async () => {
    const calls: string[] = [];
    const open = [{ table_name: 'csat_surveys', stream: 'csat_surveys.sent', scope: 'w', items: 1 }];
    // The destination's bookkeeping, recording every call; only its set-aside read answers.
    const bookkeeping = new Proxy({} as Bookkeeping, {
      get:
        (_target, name) =>
        (...args: unknown[]) => {
          calls.push(name === 'select' ? `select ${String(args[0])}` : String(name));
          return name === 'openRejections'
            ? Promise.resolve(open.splice(0))
            : Promise.reject(new Error(`${String(name)} called`));
        },
    });
    const metrics = syncMetricsOf(
      { SYNC_FRESHNESS_SLO: 2 * HOUR },
      { rateStats: () => [] },
      bookkeeping,
      silent,
    );
    for (const stream of ['tickets', 'ticket_messages', 'csat_surveys', 'agent_sessions'] as const) {
      metrics.pageRead(stream, Date.now() - HOUR);
      metrics.rowsWritten({
        stream,
        table: stream,
        rows: 1,
        rejected: 1,
        newestMs: Date.now() - 2 * HOUR,
        setAsideNewestMs: Date.now() - HOUR,
      });
    }
    // Every gauge of every scrape, freshness's included.
    await metrics.registry.metrics();
    await metrics.registry.metrics();
    expect(calls.filter((c) => c !== 'openRejections')).toEqual([]);
    expect(calls.length).toBeGreaterThan(0);
  });
});

describe('the /metrics endpoint (worker/metrics-endpoint.ts)', () => {
  let endpoint: MetricsEndpoint | undefined;
  let sdk: Server | undefined;
  afterEach(async () => {
    await endpoint?.close();
    await new Promise<void>((resolve) => (sdk ? sdk.close(() => resolve()) : resolve()));
    endpoint = sdk = undefined;
  });

  /** A stand-in for the SDK's exporter on a loopback port: the Prometheus text Temporal's core serves. */
  async function sdkExporter(): Promise<string> {
    sdk = createServer((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'text/plain' })
        .end(
          '# HELP temporal_worker_start_total x\n# TYPE temporal_worker_start_total counter\ntemporal_worker_start_total 5\n',
        ),
    );
    await new Promise<void>((resolve) => sdk!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(sdk.address() as AddressInfo).port}/metrics`;
  }

  it("serves the sync's metrics followed by the Temporal SDK's, in the Prometheus text format", async () => {
    const { metrics } = metricsWith();
    metrics.rowsWritten({ stream: 'tags', table: 'tags', rows: 12, rejected: 0, newestMs: null });
    endpoint = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 }, await sdkExporter(), silent);
    const res = await fetch(endpoint.url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toMatch(/^support_sync_rows_written_total\{table="tags"\} 12$/m);
    expect(text).toMatch(/^support_sync_temporal_runtime_metrics_up 1$/m);
    expect(text).toMatch(/^temporal_worker_start_total 5$/m);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect((await fetch(endpoint.url.replace('/metrics', '/'))).status).toBe(404);
  });

  it("still answers when the SDK's exporter does not, and says so", async () => {
    const { metrics } = metricsWith();
    const gone = await sdkExporter();
    await new Promise<void>((resolve) => sdk!.close(() => resolve()));
    sdk = undefined;
    endpoint = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 }, gone, silent);
    const text = await (await fetch(endpoint.url)).text();
    expect(text).toMatch(/^support_sync_temporal_runtime_metrics_up 0$/m);
    expect(text).not.toMatch(/^temporal_/m);
  });

  it('refuses a port in use with a message naming the flag', async () => {
    const { metrics } = metricsWith();
    endpoint = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 }, null, silent);
    const port = Number(new URL(endpoint.url).port);
    await expect(serveMetrics(metrics, { host: '127.0.0.1', port }, null, silent)).rejects.toThrow(
      `--metrics-port: cannot listen on 127.0.0.1:${port} (EADDRINUSE)`,
    );
  });

  it('--metrics-port takes a port or host:port', () => {
    expect(parseMetricsAddress('9464')).toEqual({ port: 9464 });
    expect(parseMetricsAddress('127.0.0.1:0')).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseMetricsAddress('[::1]:9464')).toEqual({ host: '::1', port: 9464 });
    for (const bad of ['', 'x', '70000', 'host:', ':9464', '1.2.3.4:9464:1'])
      expect(() => parseMetricsAddress(bad), bad).toThrow(/is not a port/);
  });
});

describe('per-workspace series (SYNC_METRICS_WORKSPACE_LABEL)', () => {
  const ENV = {
    SUPPORT_API_URL: 'http://localhost:1',
    SUPPORT_API_KEY: 'cx_test',
    DESTINATION_URL: 'postgres://u:p@localhost/db',
  };
  const problemsOf = (env: Record<string, string>) => {
    try {
      loadConfig({ ...ENV, ...env });
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };

  it('the setting: off by default, a limit of 50 workspaces; a limit is a whole number from 1 to 1000', () => {
    const config = loadConfig(ENV);
    expect(config.SYNC_METRICS_WORKSPACE_LABEL).toBe(false);
    expect(config.SYNC_METRICS_WORKSPACE_LIMIT).toBe(50);
    const on = loadConfig({
      ...ENV,
      SYNC_METRICS_WORKSPACE_LABEL: 'true',
      SYNC_METRICS_WORKSPACE_LIMIT: '3',
    });
    expect(on.SYNC_METRICS_WORKSPACE_LABEL).toBe(true);
    expect(on.SYNC_METRICS_WORKSPACE_LIMIT).toBe(3);
    for (const bad of ['0', '1001', '2.5', 'many'])
      expect(problemsOf({ SYNC_METRICS_WORKSPACE_LIMIT: bad }).join(), bad).toMatch(
        /SYNC_METRICS_WORKSPACE_LIMIT/,
      );
    expect(problemsOf({ SYNC_METRICS_WORKSPACE_LABEL: 'yes' }).join()).toMatch(
      /SYNC_METRICS_WORKSPACE_LABEL/,
    );
  });

  it('the label takes the first workspaces up to the limit, each its own id, every later one _other', () => {
    const labels = new WorkspaceLabels(2);
    expect(labels.of('default')).toEqual({ label: 'default', firstOther: false });
    expect(labels.of('acme')).toEqual({ label: 'acme', firstOther: false });
    expect(labels.of('globex')).toEqual({ label: OTHER_WORKSPACES, firstOther: true });
    expect(labels.of('globex')).toEqual({ label: OTHER_WORKSPACES, firstOther: false });
    expect(labels.of('initech')).toEqual({ label: OTHER_WORKSPACES, firstOther: true });
    // A workspace named keeps its label; the bucket is no workspace id (a slug has no `_`).
    expect(labels.of('acme').label).toBe('acme');
    expect(WorkspaceId.safeParse(OTHER_WORKSPACES).success).toBe(false);
    // However many workspaces: the limit's values and the bucket, no more.
    const many = new WorkspaceLabels(5);
    const values = new Set(Array.from({ length: 1000 }, (_, i) => many.of(`w${i}`).label));
    expect(values.size).toBe(6);
    expect(() => new WorkspaceLabels(0)).toThrow(RangeError);
  });

  /** The same events, of three workspaces, into the metrics a configuration makes (syncMetricsOf). */
  function observed(env: Record<string, string>) {
    const lines: Record<string, unknown>[] = [];
    const logger = pino(
      { level: 'warn' },
      { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const reads = { default: 0, acme: 0, globex: 0 };
    const config = loadConfig({ ...ENV, ...env });
    const metrics = syncMetricsOf(
      config,
      { rateStats: () => [] },
      {
        openRejections: async () => {
          reads.default += 1;
          return [];
        },
      },
      logger,
    );
    const acme = metrics.forWorkspace('acme', {
      openSetAside: async () => {
        reads.acme += 1;
        return new Set(['csat_surveys']);
      },
      freshnessSloMs: HOUR,
    });
    const globex = metrics.forWorkspace('globex', {
      openSetAside: async () => {
        reads.globex += 1;
        return new Set();
      },
      freshnessSloMs: 4 * HOUR,
    });
    const now = Date.now();
    metrics.pageRead('tickets', now - HOUR);
    metrics.rowsWritten({ stream: 'tickets', table: 'tickets', rows: 10, rejected: 0, newestMs: now - HOUR });
    acme.pageRead('csat_surveys', now - HOUR);
    acme.rowsWritten({
      stream: 'csat_surveys',
      table: 'csat_surveys',
      rows: 3,
      rejected: 1,
      newestMs: now - 3 * HOUR,
      setAsideNewestMs: now - HOUR,
    });
    acme.runRecorded(run({ run_id: 'a1', status: 'failed', finished_at: '2026-06-01T11:30:00.000Z' }));
    globex.pageRead('tickets', now - 2 * HOUR);
    globex.rowsWritten({
      stream: 'tickets',
      table: 'tickets',
      rows: 5,
      rejected: 0,
      newestMs: now - 2 * HOUR,
    });
    // The same run id in another workspace is another run.
    globex.runRecorded(run({ run_id: 'a1', status: 'failed', finished_at: '2026-06-01T11:40:00.000Z' }));
    return { metrics, lines, reads };
  }

  it('on: the series of a workspace carry its workspace, its freshness and target its own', async () => {
    const { metrics, lines, reads } = observed({
      SYNC_METRICS_WORKSPACE_LABEL: 'true',
      SYNC_METRICS_WORKSPACE_LIMIT: '2',
    });
    const at = (series: string) => sample(metrics, series);
    expect(await at('support_sync_rows_written_total{table="tickets",workspace="default"}')).toBe(10);
    expect(await at('support_sync_rows_written_total{table="csat_surveys",workspace="acme"}')).toBe(3);
    expect(await at('support_sync_rejected_items_total{table="csat_surveys",workspace="acme"}')).toBe(1);
    expect(await at('support_sync_pages_read_total{stream="csat_surveys",workspace="acme"}')).toBe(1);
    expect(await at('support_sync_runs_total{mode="incremental",status="failed",workspace="acme"}')).toBe(1);
    expect(await at('support_sync_last_run_status{status="failed",workspace="acme"}')).toBe(1);
    expect(await at('support_sync_last_run_status{status="failed",workspace="default"}')).toBeUndefined();
    // Beyond the limit of 2 (default, acme): globex is counted under _other, and the log says so once.
    expect(await at('support_sync_rows_written_total{table="tickets",workspace="_other"}')).toBe(5);
    expect(await at('support_sync_runs_total{mode="incremental",status="failed",workspace="_other"}')).toBe(
      1,
    );
    expect(lines).toEqual([
      expect.objectContaining({ workspace: 'globex', label: '_other', msg: expect.stringMatching(/LIMIT/) }),
    ]);
    // Freshness per workspace: acme's lag is what it set aside, default's none; each its own target.
    expect(await at('support_sync_freshness_lag_seconds{stream="csat_surveys",workspace="acme"}')).toBe(
      2 * 3600,
    );
    expect(await at('support_sync_freshness_lag_seconds{stream="tickets",workspace="default"}')).toBe(0);
    expect(await at('support_sync_freshness_lag_seconds{stream="csat_surveys",workspace="default"}')).toBe(
      undefined,
    );
    expect(await at('support_sync_freshness_slo_seconds{workspace="default"}')).toBe(7200);
    expect(await at('support_sync_freshness_slo_seconds{workspace="acme"}')).toBe(3600);
    expect(await at('support_sync_freshness_slo_seconds{workspace="_other"}')).toBe(4 * 3600);
    // Only acme set anything aside: only its bookkeeping is asked.
    expect(reads).toEqual({ default: 0, acme: 1, globex: 0 });
    // The governor's series are per key: never a workspace.
    expect(await metrics.registry.metrics()).toMatch(
      /^support_sync_api_requests_total\{route_class="list"\} 0$/m,
    );
  });

  it('off: no series has a workspace; every workspace counted together, a stream’s lag the worst of theirs', async () => {
    const { metrics, lines } = observed({});
    const text = await metrics.registry.metrics();
    expect(text).not.toContain('workspace=');
    expect(await sample(metrics, 'support_sync_rows_written_total{table="tickets"}')).toBe(15);
    expect(await sample(metrics, 'support_sync_runs_total{mode="incremental",status="failed"}')).toBe(2);
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="tickets"}')).toBe(0);
    expect(await sample(metrics, 'support_sync_freshness_lag_seconds{stream="csat_surveys"}')).toBe(2 * 3600);
    expect(await sample(metrics, 'support_sync_freshness_slo_seconds')).toBe(7200);
    expect(lines).toEqual([]);
  });
});
