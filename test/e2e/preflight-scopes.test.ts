import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamVerdict } from '../../cli/preflight/verdicts.js';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';

/** The streams the companion's `agent_limited` key may read (companion/README.md, "Keys"). */
const READABLE = 'views,metric_catalog,tickets,ticket_messages';
/** The endpoints of the streams it may not read. */
const REFUSED = /^\/public\/v1\/(tags|teams|agents|csat-surveys|agent-sessions)$/;

/**
 * Issue 23: a new user's key lacks some scopes and permissions (the companion's `agent_limited` key:
 * `tickets:read` and `analytics:read`, an agent without `dashboard.ticket_csat` and
 * `dashboard.other_agents_metrics`, restricted to some channels and one team). Preflight names what each
 * refused stream lacks and the SYNC_STREAMS that leaves it out; nothing starts until then; with it, the run
 * succeeds and its reconciliation skips the report comparisons the restricted key cannot make.
 */
describe('a key that lacks permissions', () => {
  let companion: CompanionHandle;
  let db: pg.Client;
  let env: Record<string, string>;

  beforeAll(async () => {
    companion = await startCompanion({ seed: 5, tickets: 150, rateLimits: false });
    const databaseUrl = await freshDatabase('e2e_preflight_scopes');
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    env = {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.agent_limited,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: `preflight-scopes-${Date.now().toString(36)}`,
      SUPPORT_API_RATE_LIMITS: 'off',
      SYNC_THREAD_LOOKBACK: 'PT0S',
      LOG_LEVEL: 'warn',
    };
  });
  afterAll(async () => {
    await db?.end();
    await companion?.stop();
  });

  it('`preflight` names each missing scope or permission and the SYNC_STREAMS that leaves the streams out', async () => {
    const r = await cli(['preflight'], env);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/tags +FORBIDDEN +the key lacks tags:read \(HTTP 403 FORBIDDEN_SCOPE/);
    expect(r.stdout).toMatch(/agents +FORBIDDEN +the key lacks agents:read/);
    expect(r.stdout).toMatch(/csat_surveys +FORBIDDEN +the key's agent lacks dashboard\.ticket_csat/);
    expect(r.stdout).toMatch(
      /agent_sessions +FORBIDDEN +the key's agent lacks dashboard\.other_agents_metrics/,
    );
    expect(r.stdout).toMatch(/tickets +ok/);
    expect(r.stdout).toContain(`leave the streams out: SYNC_STREAMS=${READABLE},report_snapshots`);

    const json = await cli(['preflight', '--json'], { ...env, SYNC_STREAMS: `${READABLE},agent_sessions` });
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout.trim().split('\n').at(-1)!) as {
      ok: boolean;
      streams: StreamVerdict[];
    };
    expect(report.ok).toBe(false);
    expect(report.streams.map((v) => [v.stream, v.status])).toEqual([
      ['views', 'ok'],
      ['metric_catalog', 'ok'],
      ['tickets', 'ok'],
      ['ticket_messages', 'ok'],
      ['agent_sessions', 'forbidden'],
    ]);
    expect(report.streams.at(-1)!.missing).toEqual(["the key's agent lacks dashboard.other_agents_metrics"]);
  });

  it('`sync --once` with every stream stops at the preflight: exit 1, the summary says why, nothing written', async () => {
    const r = await cli(['sync', '--once'], env);
    expect(r.code, r.stderr).toBe(1);
    const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      status: string;
      error: string;
      preflight: StreamVerdict[];
    };
    expect(summary.status).toBe('failed');
    expect(summary.error).toContain('tags: the key lacks tags:read');
    expect(summary.error).toContain(`SYNC_STREAMS=${READABLE},report_snapshots`);
    expect(summary.preflight.filter((v) => v.status === 'forbidden')).toHaveLength(5);
    const tables = await db.query(
      `SELECT table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    expect(tables.rows).toEqual([]);
  });

  it('with them left out by SYNC_STREAMS the run succeeds, and the restricted reports are skipped, not mismatched', async () => {
    companion.clearRequestLog();
    const r = await cli(['sync', '--once'], { ...env, SYNC_STREAMS: READABLE });
    expect(r.code, r.stderr).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      status: string;
      reconciliation: { mismatch: number; skipped: number };
    };
    expect(summary.status).toBe('succeeded');
    expect(companion.requestLog.filter((e) => REFUSED.test(e.path))).toEqual([]);

    const { rows } = await db.query(
      `SELECT source_value, warehouse_value, status, note FROM support._reconciliation WHERE metric = 'new_tickets'`,
    );
    // The 14 complete UTC days before the run and its day so far.
    expect(rows).toHaveLength(15);
    for (const row of rows) {
      expect(row.status).toBe('skipped');
      expect(row.note).toMatch(
        /spec 4\.12: the key's agent .* sees only channels email, widget, whatsapp; teams /,
      );
    }
    // Not like-for-like indeed: the restricted report counts fewer tickets than the warehouse holds.
    const reported = rows.reduce((n, row) => n + row.source_value, 0);
    const held = rows.reduce((n, row) => n + row.warehouse_value, 0);
    expect(reported).toBeLessThan(held);
    expect(summary.reconciliation.mismatch).toBe(0);
    expect(summary.reconciliation.skipped).toBeGreaterThanOrEqual(14);
  });
});
