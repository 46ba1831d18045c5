import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestsByClass } from '../../bench/support/harness.js';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { QUEUED_ROUTE_CLASSES } from '../../schemas/config.js';
import { Forecast } from '../../schemas/forecast.js';
import type { RunSummary } from '../../worker/run-sync.js';
import { cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';

/** Every table of the database, and what `_sync_state` and `_thread_queue` hold (when they exist). */
async function warehouseState(db: pg.Client) {
  const tables = await db.query(
    `SELECT table_schema || '.' || table_name AS t FROM information_schema.tables
     WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1`,
  );
  const names = tables.rows.map((r) => String(r.t));
  const checkpoints = names.includes('support._sync_state')
    ? [
        ...(await db.query(`SELECT * FROM support._sync_state ORDER BY stream, scope`)).rows,
        ...(await db.query(`SELECT * FROM support._thread_queue ORDER BY ticket_number`)).rows,
      ]
    : [];
  const runs = names.includes('support._sync_runs')
    ? (await db.query(`SELECT count(*)::int AS n FROM support._sync_runs`)).rows[0].n
    : 0;
  return { tables: names, checkpoints, runs };
}

const within = (forecast: number, actual: number, share: number) =>
  Math.abs(forecast - actual) <= share * Math.max(actual, 1);

describe('plan: a forecast that writes nothing and predicts the run that follows', () => {
  let companion: CompanionHandle;
  let db: pg.Client;
  let env: Record<string, string>;
  let dataDir: string;

  beforeAll(async () => {
    companion = await startCompanion({ seed: 11, tickets: 150, rateLimits: false });
    const databaseUrl = await freshDatabase('e2e_plan');
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    dataDir = mkdtempSync(join(tmpdir(), 'support-sync-plan-'));
    env = {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: `e2e-plan-${Date.now().toString(36)}`,
      SUPPORT_SYNC_DATA_DIR: dataDir,
      // The companion's limits are off: no pacing in the run either (the forecast's times then use the
      // spec's limits, which this test does not check: bench:plan does).
      SUPPORT_API_RATE_LIMITS: 'off',
      // Export windows of a week: each holds less than a page (the companion's ~60 sessions a week), so
      // their requests are the planner's windows, which the forecast must match exactly. Pages of windows
      // holding more are estimated from a probe page (bench:plan prints how close that comes).
      SYNC_WINDOW: 'P7D',
      // The rolling re-read's one round a run, and no more: beyond it, it reads only while other streams
      // are busy, which with the limits off is a matter of timing (bench:plan measures the estimate).
      SYNC_THREAD_REVERIFY_PER_RUN: '4',
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    await db?.end();
    await companion?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  let forecast: Forecast;

  it('on an empty warehouse: reads the ticket list (list budget only), writes nothing, prints the forecast', async () => {
    companion.clearRequestLog();
    const r = await cli(['plan', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    forecast = Forecast.parse(JSON.parse(r.stdout.trim().split('\n').at(-1)!));
    expect(forecast.kind).toBe('first sync (whole history)');
    // Nothing of the detail class: the list pages of one sweep, and one probe page per export pass.
    const spent = requestsByClass(companion.requestLog);
    expect(spent.detail).toBe(0);
    expect(spent.list).toBe(forecast.cost.list);
    expect(spent.analytics).toBe(forecast.cost.analytics);
    expect(forecast.cost.analytics).toBeLessThanOrEqual(3);
    expect(companion.requestLog.every((e) => e.method === 'GET')).toBe(true);
    // Not a table created, not a row written.
    expect(await warehouseState(db)).toEqual({ tables: [], checkpoints: [], runs: 0 });
    // A first sync reads every listed ticket's thread.
    expect(forecast.tickets.threads).toBe(forecast.tickets.listed);
    console.info(
      `plan (empty warehouse): ${r.ms} ms; ${forecast.items.map((i) => `${i.source} ${i.requests}`).join(', ')}`,
    );
  });

  it('the full sync that follows requests per class what the forecast said (within 2 %), and its summary says so', async () => {
    companion.clearRequestLog();
    const r = await cli(['sync', '--once'], env);
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as RunSummary;
    expect(summary.status).toBe('succeeded');
    const actual = requestsByClass(companion.requestLog);
    for (const c of QUEUED_ROUTE_CLASSES) {
      expect(summary.requests?.[c]?.requests ?? 0, c).toBe(actual[c]);
      expect(
        within(forecast.classes[c].requests, actual[c], 0.02),
        `${c}: forecast ${forecast.classes[c].requests}, actual ${actual[c]}`,
      ).toBe(true);
    }
    // The summary carries the comparison: the forecast this plan kept, and the run's own figures.
    expect(summary.forecast?.made_at).toBe(forecast.made_at);
    for (const c of QUEUED_ROUTE_CLASSES) {
      expect(summary.forecast?.requests[c]).toMatchObject({
        forecast: forecast.classes[c].requests,
        actual: actual[c],
      });
    }
    console.info(`full sync: ${JSON.stringify(summary.forecast)}`);
  });

  it('on a synced warehouse: reads checkpoints and rows, changes nothing, and forecasts the incremental run', async () => {
    const before = await warehouseState(db);
    companion.clearRequestLog();
    const r = await cli(['plan', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    const next = Forecast.parse(JSON.parse(r.stdout.trim().split('\n').at(-1)!));
    expect(await warehouseState(db)).toEqual(before);
    expect(next.kind).toBe('incremental run');
    // Every export window the look-back touches is one the warehouse holds: no probe page needed.
    expect(next.cost.analytics).toBe(0);
    expect(requestsByClass(companion.requestLog).detail).toBe(0);

    companion.clearRequestLog();
    const run = await cli(['sync', '--once'], env);
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as RunSummary;
    const actual = requestsByClass(companion.requestLog);
    for (const c of QUEUED_ROUTE_CLASSES) {
      expect(
        within(next.classes[c].requests, actual[c], 0.02),
        `${c}: forecast ${next.classes[c].requests}, actual ${actual[c]}`,
      ).toBe(true);
    }
    expect(summary.forecast?.made_at).toBe(next.made_at);
  });

  it('a backfill forecast is refused without its range, and writes nothing either', async () => {
    const usage = await cli(['plan', '--backfill', '--from', '2026-01-01'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--backfill needs --from and --to');

    const before = await warehouseState(db);
    const to = new Date().toISOString();
    const from = new Date(Date.now() - 120 * 24 * 3600 * 1000).toISOString();
    const r = await cli(['plan', '--backfill', '--from', from, '--to', to, '--json', '--no-save'], env);
    expect(r.code, r.stderr).toBe(0);
    const backfill = Forecast.parse(JSON.parse(r.stdout.trim().split('\n').at(-1)!));
    expect(backfill.mode).toBe('backfill');
    // 120 days in windows of at most a week (SYNC_WINDOW), per pass; all within what the warehouse holds, so
    // their pages come from its rows: no probe page.
    expect(backfill.passes.map((p) => p.windows.length)).toEqual([18, 18, 18]);
    expect(backfill.passes.flatMap((p) => p.windows.map((w) => w.basis))).not.toContain('density');
    expect(backfill.cost.analytics).toBe(0);
    expect(await warehouseState(db)).toEqual(before);
  });
});
