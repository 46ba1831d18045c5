import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../worker/config.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const since = day(Date.now() - 60 * DAY_MS);
const until = day(Date.now());
const KPI = [
  'FROM tickets',
  'SHOW new_tickets',
  `SINCE ${since} UNTIL ${until}`,
  'VISUALIZE new_tickets TYPE kpi',
];
const BY_CHANNEL = [
  'FROM tickets',
  'SHOW new_tickets',
  `SINCE ${since} UNTIL ${until}`,
  'GROUP BY channel',
  'VISUALIZE new_tickets TYPE horizontal_bar',
];

function queriesFile(content: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'report-queries-'));
  const file = join(dir, 'queries.yaml');
  writeFileSync(file, content);
  return file;
}

const yamlQuery = (name: string, lines: string[], timezone: string) =>
  `- name: ${name}\n  timezone: ${timezone}\n  query: |\n${lines.map((l) => `    ${l}`).join('\n')}\n`;

describe('report snapshots: saved queries (REPORT_QUERIES) snapshotted by the pipeline', () => {
  let p: Pipeline;
  const file = queriesFile(
    yamlQuery('new-tickets-60d', KPI, 'Europe/Berlin') + yamlQuery('new-by-channel', BY_CHANNEL, 'UTC'),
  );

  beforeAll(async () => {
    p = await startPipeline('e2e_reports', {
      companion: { seed: 5, tickets: 150, rateLimits: false },
      env: { REPORT_QUERIES: file },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('REPORT_QUERIES is read and validated into the run settings', () => {
    expect(p.config.REPORT_QUERIES?.queries.map((q) => q.name)).toEqual([
      'new-tickets-60d',
      'new-by-channel',
    ]);
    expect(p.config.REPORT_QUERIES?.queries[0]?.query).toBe(KPI.join('\n'));
  });

  it('a run takes every query once: the KPI value equals the API answer, values rows exist, checkpoint moved', async () => {
    const summary = await p.run('incremental', {}, ['report_snapshots']);
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');

    const snapshots = await p.db.query(
      'SELECT snapshot_id, query, timezone, taken_at, kind, value_count, _raw FROM support.report_snapshots ORDER BY kind',
    );
    expect(snapshots.rows.map((r) => r.kind)).toEqual(['category', 'kpi']);
    const kpi = snapshots.rows.find((r) => r.kind === 'kpi')!;
    expect(kpi.timezone).toBe('Europe/Berlin');
    const answer = await p.deps.client.queryReport({ query: KPI.join('\n'), timezone: 'Europe/Berlin' });
    if (answer.kind !== 'kpi') throw new Error('kpi expected');
    expect(answer.value).toBeGreaterThan(0);
    expect(kpi._raw.value).toBe(answer.value);

    const values = await p.db.query(
      'SELECT snapshot_id, measure_key, value FROM support.report_snapshot_values ORDER BY snapshot_id, value_index',
    );
    const kpiValues = values.rows.filter((r) => r.snapshot_id === kpi.snapshot_id);
    expect(kpiValues.find((r) => r.measure_key === 'value')?.value).toBe(answer.value);
    for (const s of snapshots.rows)
      expect(values.rows.filter((r) => r.snapshot_id === s.snapshot_id)).toHaveLength(Number(s.value_count));
    const category = snapshots.rows.find((r) => r.kind === 'category')!;
    expect(Number(category.value_count)).toBeGreaterThan(0);

    const state = await p.db.query(
      `SELECT scope, high_water_mark, status FROM support._sync_state WHERE stream = 'report_snapshots' ORDER BY scope`,
    );
    expect(state.rows.map((r) => [r.scope, r.status])).toEqual([
      ['new-by-channel', 'complete'],
      ['new-tickets-60d', 'complete'],
    ]);
    expect(new Date(state.rows[0].high_water_mark).getTime()).toBe(new Date(kpi.taken_at).getTime());

    // The queries ran as analytics-class activities on the analytics task queue, in the run's own history
    // (workflows/run/in-run.ts); the ledger holds the window under the id it is known by.
    const runs = await p.db.query(
      `SELECT w.workflow_id, r.workflow_id AS run_workflow_id FROM support._sync_runs w
       JOIN support._sync_runs r ON r.run_id = w.parent_run_id
       WHERE w.stream = 'report_snapshots' AND w.status = 'succeeded'`,
    );
    expect(runs.rows).toHaveLength(1);
    expect(runs.rows[0].workflow_id).toMatch(/^report_snapshots\/[^/]+\/[^/]+$/);
    const history = await p.env.client.workflow.getHandle(runs.rows[0].run_workflow_id).fetchHistory();
    const scheduled = (history.events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes] : [],
    );
    const queries = scheduled.filter((a) => a.activityType?.name === 'syncReportSnapshot');
    expect(queries.map((a) => a.taskQueue?.name)).toEqual([
      `${p.taskQueue}-analytics`,
      `${p.taskQueue}-analytics`,
    ]);
  });

  it('a second run adds new snapshots (history), it does not overwrite the first', async () => {
    const summary = await p.run('incremental', {}, ['report_snapshots']);
    expect(summary.status).toBe('succeeded');
    const { rows } = await p.db.query(
      'SELECT kind, count(*)::int AS n FROM support.report_snapshots GROUP BY kind ORDER BY kind',
    );
    expect(rows).toEqual([
      { kind: 'category', n: 2 },
      { kind: 'kpi', n: 2 },
    ]);
  });

  it('a query the API rejects fails the stream naming the query, the line and the API message', async () => {
    const bad = {
      name: 'typo-query',
      timezone: 'UTC',
      query: ['FROM tickets', 'SHOW new_tikets', 'DURING this_month', 'VISUALIZE new_tikets TYPE kpi'].join(
        '\n',
      ),
    };
    const summary = await p.run('incremental', { reportQueries: [bad] }, ['report_snapshots']);
    expect(summary.status).toBe('failed');
    expect(summary.error).toMatch(/report_snapshots\//);
    expect(summary.error).toMatch(
      /report query "typo-query" rejected by the API at line 2 \("SHOW new_tikets"\): line 2: .*new_tikets/,
    );
    expect(summary.error).toMatch(/VALIDATION_ERROR/);
  });

  it('a bad REPORT_QUERIES file is a configuration error naming the entry and the problem', () => {
    const env = {
      SUPPORT_API_URL: 'http://localhost:1',
      SUPPORT_API_KEY: 'k',
      DESTINATION_URL: 'postgres://localhost/x',
    };
    const broken = queriesFile(
      `${yamlQuery('ok', KPI, 'UTC')}- name: second\n  query: ""\n  timezone: Mars/Olympus\n${yamlQuery('ok', KPI, 'UTC')}`,
    );
    let problems: string[] = [];
    try {
      loadConfig({}, undefined, { ...env, REPORT_QUERIES: broken });
    } catch (err) {
      problems = (err as { problems: string[] }).problems;
    }
    expect(problems).toEqual([
      expect.stringMatching(
        /^REPORT_QUERIES: .*queries\.yaml: entry 2 \("second"\): query: must be a non-empty report query$/,
      ),
      expect.stringMatching(/^REPORT_QUERIES: .*: entry 2 \("second"\): timezone: must be an IANA time zone/),
      expect.stringMatching(/^REPORT_QUERIES: .*: entry 3 \("ok"\): name: "ok" is used by an earlier entry$/),
    ]);
    expect(() => loadConfig({}, undefined, { ...env, REPORT_QUERIES: '/nonexistent/q.yaml' })).toThrow(
      /REPORT_QUERIES: \/nonexistent\/q.yaml: cannot read the file \(ENOENT\)/,
    );
  });
});
