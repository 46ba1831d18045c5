import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';

const PAGE_SIZE = 10;

/**
 * Issue 20: an item that breaks what the spec defines strictly (here a CSAT score outside 1–5) is set aside
 * in `_rejected` with its reason; the rest of its page and window commit, every other stream completes, the
 * run says it is incomplete (never "succeeded"), and a later run stores the item once the source serves it
 * right, resolving its `_rejected` entry.
 */
describe('a poison item', () => {
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

  it('is set aside with its reason, its page and window commit, and the run is incomplete', async () => {
    const world = p.companion.world;
    // An unanswered survey late in the second export window, so its page has good items around it.
    const w2Start = Date.parse(p.config.SYNC_START_DATE!) + 90 * DAY_MS;
    const w2End = w2Start + 90 * DAY_MS;
    const inWindow = (micros: number) => micros / 1000 >= w2Start && micros / 1000 < w2End;
    const sent = world.surveys.filter((s) => s.orgId === world.orgA.id && inWindow(s.sentAt));
    const rank = (s: (typeof sent)[number]) => sent.filter((o) => o.sentAt < s.sentAt).length;
    const victim = sent.filter((s) => s.submittedAt === null).sort((a, b) => rank(b) - rank(a))[0]!;
    expect(victim).toBeDefined();
    expect(rank(victim)).toBeGreaterThanOrEqual(PAGE_SIZE);
    victim.score = 9; // the API now serves a score outside 1–5 for this survey

    const summary = await p.run('incremental');
    expect(summary.status).toBe('incomplete');
    expect(summary.error).toBeUndefined();
    expect(summary.missing?.rejected).toEqual({ csat_surveys: 1 });
    expect(summary.missing?.summary).toMatch(/1 csat_surveys item set aside/);
    for (const [name, s] of Object.entries(summary.streams)) expect(s.status, name).toBe('succeeded');

    const rejected = await p.db.query(
      'SELECT table_name, item_id, stream, scope, reason, raw, resolved_at FROM support._rejected',
    );
    expect(rejected.rows).toHaveLength(1);
    const row = rejected.rows[0];
    expect(row).toMatchObject({
      table_name: 'csat_surveys',
      item_id: victim.id,
      stream: 'csat_surveys.sent',
    });
    expect(row.reason).toMatch(/^score: /);
    expect(row.raw.score).toBe(9);
    expect(row.resolved_at).toBeNull();
    const [from, before] = String(row.scope).split('/');
    expect(Date.parse(from!)).toBeLessThanOrEqual(victim.sentAt / 1000);
    expect(Date.parse(before!)).toBeGreaterThan(victim.sentAt / 1000);

    // Every other survey of the victim's window is stored; the victim is not.
    const survivors = sent.filter((s) => s.id !== victim.id).map((s) => s.id);
    const stored = await p.db.query('SELECT id FROM support.csat_surveys WHERE id = ANY($1::text[])', [
      [...survivors, victim.id],
    ]);
    expect(stored.rows.map((r) => r.id).sort()).toEqual([...survivors].sort());
    const run = await p.db.query('SELECT status, error FROM support._sync_runs WHERE run_id = $1', [
      summary.run_id,
    ]);
    expect(run.rows[0].status).toBe('incomplete');
    expect(run.rows[0].error).toMatch(/set aside in _rejected/);

    // The source serves it right again: the next run re-reads its window (older than the look-back), stores
    // it and resolves the entry.
    victim.score = null;
    const next = await p.run('incremental');
    expect(next.status).toBe('succeeded');
    const after = await p.db.query('SELECT resolved_at FROM support._rejected');
    expect(after.rows[0].resolved_at).toBeInstanceOf(Date);
    const survey = await p.db.query('SELECT score FROM support.csat_surveys WHERE id = $1', [victim.id]);
    expect(survey.rows).toEqual([{ score: null }]);
  });

  it('a page where most items break the rules fails its window instead of looking like success', async () => {
    const world = p.companion.world;
    // Every session the incremental run re-reads (its look-back: the last 72 h) loses its agent id.
    const since = Date.now() - 4 * DAY_MS;
    const broken = world.sessions.filter(
      (s) => s.orgId === world.orgA.id && (s.end === null || s.end > since),
    );
    expect(broken.length).toBeGreaterThanOrEqual(3);
    const saved = broken.map((s) => s.agentId);
    for (const s of broken) s.agentId = '';
    try {
      const summary = await p.run('incremental');
      expect(summary.status).toBe('failed');
      expect(summary.error).toMatch(/agent_sessions\/.*items on the page break the spec's rules/);
    } finally {
      broken.forEach((s, i) => {
        s.agentId = saved[i]!;
      });
    }
  });
});
