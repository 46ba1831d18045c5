import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';

const PAGE_SIZE = 10;

describe('a schema-violating page', () => {
  let p: Pipeline;

  beforeAll(async () => {
    p = await startPipeline('e2e_schema_violation', {
      companion: { seed: 17, tickets: 60 },
      env: { SYNC_PAGE_SIZE: String(PAGE_SIZE) },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('fails its window naming the id and field, keeps the checkpoint of the last good page, and the other streams complete', async () => {
    const world = p.companion.world;
    // The second 90-day export window of the run (start date 200 days ago): an unanswered survey (only in
    // the by-sent pass) that comes late in it, so good pages of its window come before the failing one.
    const w2Start = Date.parse(p.config.SYNC_START_DATE!) + 90 * DAY_MS;
    const w2End = w2Start + 90 * DAY_MS;
    const inWindow = (micros: number) => micros / 1000 >= w2Start && micros / 1000 < w2End;
    const sent = world.surveys.filter((s) => s.orgId === world.orgA.id && inWindow(s.sentAt));
    const rank = (s: (typeof sent)[number]) => sent.filter((o) => o.sentAt < s.sentAt).length;
    const victim = sent.filter((s) => s.submittedAt === null).sort((a, b) => rank(b) - rank(a))[0]!;
    expect(victim).toBeDefined();
    expect(rank(victim)).toBeGreaterThanOrEqual(PAGE_SIZE);
    victim.score = 9; // the API now serves a score outside 1–5 for this survey
    p.companion.clearRequestLog();

    const summary = await p.run('incremental');
    expect(summary.status).toBe('failed');
    const error = summary.error ?? '';
    // The window workflow id (`<pass>/<from>/<before>`), the item id and the field.
    const window = /csat_surveys\.sent\/[^/ ]+\/[^/ ]+(?=: )/.exec(error);
    expect(window, error).not.toBeNull();
    expect(error).toContain(victim.id);
    expect(error).toMatch(/field score\b/);
    expect(error).not.toMatch(/agent_sessions|csat_surveys\.submitted|tickets\/|views\//);

    const run = await p.db.query('SELECT status, error FROM support._sync_runs WHERE run_id = $1', [
      summary.run_id,
    ]);
    expect(run.rows[0].status).toBe('failed');
    expect(run.rows[0].error).toContain(victim.id);
    expect(run.rows[0].error).toMatch(/field score\b/);
    expect(run.rows[0].error).toContain(window![0]);

    // Other streams still complete.
    const statuses = Object.fromEntries(Object.entries(summary.streams).map(([k, v]) => [k, v.status]));
    expect(statuses).toEqual({
      tickets: 'succeeded',
      ticket_messages: 'succeeded',
      agent_sessions: 'succeeded',
      views: 'succeeded',
      tags: 'succeeded',
      teams: 'succeeded',
      agents: 'succeeded',
      metric_catalog: 'succeeded',
      'csat_surveys.sent': 'failed',
      'csat_surveys.submitted': 'succeeded',
    });

    // Every failed window: its checkpoint still holds the cursor of the last good page, which is the cursor
    // the failing request was sent with; the failing page did not move it.
    const failedWindows = await p.db.query(
      `SELECT workflow_id, error FROM support._sync_runs WHERE parent_run_id = $1 AND status = 'failed'`,
      [summary.run_id],
    );
    expect(failedWindows.rows.map((r) => r.workflow_id)).toEqual([window![0]]);
    for (const { workflow_id, error: windowError } of failedWindows.rows as {
      workflow_id: string;
      error: string;
    }[]) {
      expect(windowError).toContain(victim.id);
      const [pass, windowStart, windowEnd] = workflow_id.split('/') as [string, string, string];
      const fromParam = pass === 'csat_surveys.sent' ? 'sent_from' : 'submitted_from';
      const requests = p.companion.requestLog.filter(
        (r) =>
          r.path === '/public/v1/csat-surveys' &&
          Date.parse(r.query[fromParam] ?? '') === Date.parse(windowStart),
      );
      const good = requests.filter((r) => r.status === 200);
      const failing = good.at(-1)!; // served 200 with the invalid item; rejected by the client's schema
      expect(failing).toBeDefined();
      expect(failing.query['cursor'], 'the violation is not on the first page').toBeDefined();
      const state = await p.db.query(
        'SELECT cursor, status, pages::int AS pages FROM support._sync_state WHERE stream = $1 AND scope = $2',
        [pass, `${windowStart}/${windowEnd}`],
      );
      expect(state.rows).toEqual([
        { cursor: failing.query['cursor'], status: 'running', pages: good.length - 1 },
      ]);
      // The survey is not in the warehouse, nor anything after it in that window's failing page.
      const stored = await p.db.query('SELECT 1 FROM support.csat_surveys WHERE id = $1', [victim.id]);
      expect(stored.rowCount).toBe(0);
    }
  });
});
