import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { cli } from '../support/cli.js';
import { freshDatabase } from '../support/postgres.js';
import { testTemporalAddress } from '../support/temporal.js';

describe('the CLI fails fast and writes nothing', () => {
  let companion: CompanionHandle;
  let databaseUrl: string;
  let db: pg.Client;

  beforeAll(async () => {
    companion = await startCompanion({ seed: 5, tickets: 20, rateLimits: false });
    databaseUrl = await freshDatabase('e2e_cli_failures');
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await companion?.stop();
  });

  it('a wrong API key: non-zero exit, INVALID_API_KEY with its request_id, no key echoed, no data', async () => {
    const wrongKey = 'cx_live_wrong_0123456789abcdefDEADBEEF';
    companion.clearRequestLog();
    const r = await cli(['sync', '--once'], {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: wrongKey,
      DESTINATION_URL: databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: `cli-wrong-key-${Date.now().toString(36)}`,
    });
    expect(r.code, r.stderr).not.toBe(0);
    expect(r.code).not.toBe(2); // a run failure, not a configuration error
    const rejected = companion.requestLog.filter((e) => e.status === 401);
    expect(rejected.length).toBeGreaterThanOrEqual(1);
    // Fails fast: the first request is refused and nothing else is asked of the API.
    expect(companion.requestLog.length).toBe(rejected.length);
    expect(r.stderr).toContain('INVALID_API_KEY');
    expect(r.stderr).toContain(rejected[0]!.requestId);
    const last = r.stdout.trim().split('\n').at(-1)!;
    const summary = JSON.parse(last) as { status: string; error: string };
    expect(summary.status).toBe('failed');
    expect(summary.error).toContain('INVALID_API_KEY');
    for (const text of [r.stdout, r.stderr]) {
      expect(text).not.toContain(wrongKey);
      expect(text).not.toContain(wrongKey.slice(8, 24));
    }
    // Nothing written: no tables at all in the destination (preflight refuses before preparing it).
    const tables = await db.query(
      `SELECT table_schema, table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    expect(tables.rows).toEqual([]);
    console.info(`cli wrong key: exit ${r.code} after ${r.ms} ms`);
  });

  it('a bad configuration: exit 2, one line per problem, nothing started', async () => {
    companion.clearRequestLog();
    const r = await cli(['sync', '--once'], {
      SUPPORT_API_URL: companion.baseUrl,
      DESTINATION_URL: 'mysql://x',
      SYNC_WINDOW: 'P91D',
      TEMPORAL_ADDRESS: testTemporalAddress(),
    });
    expect(r.code, r.stderr).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines.find((l) => l.includes('SUPPORT_API_KEY'))).toMatch(/required/);
    expect(lines.find((l) => l.includes('DESTINATION_URL'))).toMatch(/postgres:\/\/|bigquery:\/\//);
    expect(lines.find((l) => l.includes('SYNC_WINDOW'))).toMatch(/P90D/);
    expect(r.stdout).toBe('');
    expect(companion.requestLog).toEqual([]);
    console.info(`cli bad config: exit ${r.code} after ${r.ms} ms`);
  });
});
