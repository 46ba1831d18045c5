import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upperBound95 } from '../../schemas/audit.js';
import { settingsFromConfig } from '../../worker/config.js';
import type { RunSummary } from '../../worker/run-sync.js';
import { testTemporalAddress } from '../support/temporal.js';
import { cli } from './cli.js';
import { type Pipeline, startPipeline } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource } from './warehouse-compare.js';

/**
 * Issue 24: the audit after every run re-reads a random sample of stored rows from the live API (the
 * companion over HTTP), compares every stored field, heals what differs within the same run, and never
 * spends more than its share of each class's budget.
 */

/**
 * The reconciliation's routes: it runs beside the audit at the run's end, so its requests (the key's
 * identity, the report query, the first page of the tickets and views lists) are told apart by route. The
 * audit reads single tickets, threads and export windows, never these.
 */
const RECONCILIATION_ROUTES = [/\/me$/, /\/reports\/query$/, /\/tickets$/, /\/views$/];

/**
 * The audit's requests of a run, per class: the companion's log from the audit child's start to its close
 * (`audit/<run id>`, as Temporal recorded them), less the reconciliation's.
 */
async function auditRequestsOf(p: Pipeline, runId: string): Promise<Record<string, number>> {
  const audit = await p.env.client.workflow.getHandle(`audit/${runId}`).describe();
  const from = audit.startTime.getTime();
  const until = audit.closeTime?.getTime() ?? Number.POSITIVE_INFINITY;
  const counts: Record<string, number> = {};
  for (const entry of p.companion.requestLog) {
    const at = Date.parse(entry.at);
    if (at < from || at > until) continue;
    if (RECONCILIATION_ROUTES.some((route) => route.test(entry.path))) continue;
    const routeClass = entry.routeClass ?? 'none';
    counts[routeClass] = (counts[routeClass] ?? 0) + 1;
  }
  return counts;
}

async function run(p: Pipeline): Promise<RunSummary> {
  p.companion.clearRequestLog();
  const summary = await p.run('incremental');
  expect(summary.error).toBeUndefined();
  expect(summary.audit?.error).toBeUndefined();
  return summary;
}

const auditRows = async (p: Pipeline, runId: string) =>
  (
    await p.db.query(
      `SELECT table_name, row_id, verdict, differences, healed FROM support._audit WHERE run_id = $1`,
      [runId],
    )
  ).rows as {
    table_name: string;
    row_id: string;
    verdict: string;
    differences: string | null;
    healed: boolean;
  }[];

describe('the audit finds fields altered in the warehouse and heals them in the same run', () => {
  let p: Pipeline;
  beforeAll(async () => {
    p = await startPipeline('e2e_audit_heal', {
      companion: { seed: 31, tickets: 20 },
      env: {
        // The rolling thread re-read would restore the removed message before the audit sees it.
        SYNC_THREAD_REVERIFY_PER_RUN: '0',
        // A budget that covers this small world whole: every ticket, thread, survey window (and most
        // session windows), so each altered row is certainly in the sample.
        SUPPORT_API_RATE_LIMITS: 'list=100,detail=100,analytics=100,directory=100',
        SUPPORT_API_RATE_WINDOW: 'PT1S',
        SYNC_AUDIT_SHARE: '1',
      },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('a status, a score and a message altered: each found, healed at once, 0 differences next run', async () => {
    const first = await run(p);
    expect(first.audit).toMatchObject({ differs: 0, healed: 0 });
    expect(first.audit!.tables['tickets']!.sampled).toBe(
      Number(
        (await p.db.query('SELECT count(*) FROM support.tickets WHERE _deleted_at IS NULL')).rows[0].count,
      ),
    );

    // Someone (or a bug) left wrong values, `_synced_at` and `_content_hash` untouched: the sync's own
    // change detection (by version and content hash) cannot see them.
    const ticket = (
      await p.db.query(
        `SELECT id, status, ticket_number FROM support.tickets WHERE _deleted_at IS NULL ORDER BY ticket_number LIMIT 1`,
      )
    ).rows[0];
    const wrongStatus = ticket.status === 'closed' ? 'open' : 'closed';
    await p.db.query(
      `UPDATE support.tickets SET status = $2::text, _raw = jsonb_set(_raw, '{status}', to_jsonb($2::text)) WHERE id = $1`,
      [ticket.id, wrongStatus],
    );
    const survey = (
      await p.db.query(
        `SELECT id, score FROM support.csat_surveys WHERE score IS NOT NULL AND _deleted_at IS NULL ORDER BY id LIMIT 1`,
      )
    ).rows[0];
    const score = Number(survey.score);
    const wrongScore = score === 5 ? 1 : 5;
    await p.db.query(
      `UPDATE support.csat_surveys SET score = $2::int, _raw = jsonb_set(_raw, '{score}', to_jsonb($2::int)) WHERE id = $1`,
      [survey.id, wrongScore],
    );
    const message = (
      await p.db.query(
        `SELECT id, ticket_number FROM support.ticket_messages WHERE _deleted_at IS NULL ORDER BY id LIMIT 1`,
      )
    ).rows[0];
    await p.db.query('DELETE FROM support.ticket_messages WHERE id = $1', [message.id]);

    const second = await run(p);
    const found = (await auditRows(p, second.run_id)).filter(
      (r) => r.verdict !== 'equal' && r.verdict !== 'changed_since',
    );
    expect(found.map((r) => [r.table_name, r.row_id, r.verdict, r.healed]).sort()).toEqual(
      [
        ['csat_surveys', survey.id, 'differs', true],
        ['ticket_messages', message.id, 'missing_in_warehouse', true],
        ['tickets', ticket.id, 'differs', true],
      ].sort(),
    );
    const differences = (id: string) => JSON.parse(found.find((r) => r.row_id === id)!.differences!);
    expect(differences(ticket.id)).toEqual([
      { field: 'status', warehouse: wrongStatus, source: ticket.status },
    ]);
    expect(differences(survey.id)).toEqual([{ field: 'score', warehouse: wrongScore, source: score }]);
    expect(second.audit).toMatchObject({ differs: 3, healed: 3 });
    expect(second.audit!.bound).toBeCloseTo(upperBound95(second.audit!.sampled, 3), 3);

    // Healed within the run: the warehouse equals the source, typed columns and `_raw` alike.
    await expectWarehouseEqualsSource(p.db, await sourceSnapshot(p.deps.client, p.config.SYNC_START_DATE!));
    const now = async (sql: string, id: string) => (await p.db.query(sql, [id])).rows[0];
    expect((await now('SELECT status FROM support.tickets WHERE id = $1', ticket.id)).status).toBe(
      ticket.status,
    );
    expect(Number((await now('SELECT score FROM support.csat_surveys WHERE id = $1', survey.id)).score)).toBe(
      score,
    );
    // And their neighbourhood queued for the next run: the ticket's and the message's threads, the survey's
    // export window.
    const queued = await p.db.query(
      `SELECT stream, scope FROM support._sync_state WHERE status = 'running'
        UNION ALL SELECT 'ticket_messages', ticket_number::text FROM support._thread_queue WHERE status = 'running'
        UNION ALL SELECT pass, 'reread/' || window_start || '/' || window_end FROM support._reread_queue
          WHERE status = 'running'
        ORDER BY 1, 2`,
    );
    const scopes = queued.rows.map((r) => `${r.stream} ${r.scope}`);
    expect(scopes).toContain(`ticket_messages ${ticket.ticket_number}`);
    expect(scopes).toContain(`ticket_messages ${message.ticket_number}`);
    const reread = scopes.find((s) => s.startsWith('csat_surveys.sent reread/'));
    expect(reread).toBeDefined();

    const third = await run(p);
    expect(third.audit).toMatchObject({ differs: 0, healed: 0 });
    expect(third.audit!.sampled).toBeGreaterThan(20);
    // The queued window was read again by that run, under its own window id, and is no longer queued.
    const window = reread!.slice('csat_surveys.sent reread/'.length);
    const read = await p.db.query(
      `SELECT status FROM support._sync_runs WHERE workflow_id = $1 AND parent_run_id = $2`,
      [`csat_surveys.sent/${window}`, third.run_id],
    );
    expect(read.rows.map((r) => r.status)).toEqual(['succeeded']);
    const plan = await p.deps.activities.planRun({
      mode: 'incremental',
      streams: ['csat_surveys'],
      settings: settingsFromConfig(p.config),
      now: new Date().toISOString(),
    });
    expect(plan.passes.flatMap((x) => x.windows).map((w) => `${w.windowStart}/${w.windowEnd}`)).not.toContain(
      window,
    );

    // Within its budget: the audit's requests per class, counted by the source, are what it reports.
    const counted = await auditRequestsOf(p, third.run_id);
    expect(counted).toEqual(third.audit!.requests);
    for (const [routeClass, n] of Object.entries(counted))
      expect(n).toBeLessThanOrEqual(third.audit!.budget![routeClass as 'detail']!);
  });
});

describe('on an untouched warehouse, at the default share', () => {
  let p: Pipeline;
  beforeAll(async () => {
    // Rate limits off: the budget is the default share (0.1) of the spec's limits per window.
    p = await startPipeline('e2e_audit_share', {
      companion: { seed: 37, tickets: 30 },
      env: { SYNC_AUDIT_SHARE: '0.1' }, // the default
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('reports 0 differences with its bound, and never exceeds its share of any class', async () => {
    const summary = await run(p);
    const audit = summary.audit!;
    // 10 % of 120 detail and of 10 analytics requests: 6 tickets, 6 threads, 1 export window.
    expect(audit.budget).toEqual({ list: 6, detail: 12, analytics: 1, directory: 6 });
    expect(audit.differs).toBe(0);
    expect(audit.tables['tickets']).toMatchObject({ sampled: 6, differs: 0, share: 0 });
    expect(audit.tables['tickets']!.bound).toBeCloseTo(1 - 0.05 ** (1 / 6), 3);
    expect(audit.bound).toBeCloseTo(upperBound95(audit.sampled, 0), 3);
    expect(audit.sampled).toBeGreaterThanOrEqual(7);

    const counted = await auditRequestsOf(p, summary.run_id);
    expect(counted).toEqual(audit.requests);
    expect(counted['detail']).toBe(12);
    expect(counted['analytics']).toBe(1);
    expect(counted['list'] ?? 0).toBe(0);
    expect(counted['directory'] ?? 0).toBe(0);
  });

  it('audit --sample N on demand, and status with the share that differs and its bound', async () => {
    const env = {
      SUPPORT_API_URL: p.companion.baseUrl,
      SUPPORT_API_KEY: p.companion.keys.admin,
      DESTINATION_URL: p.databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: p.taskQueue,
      SUPPORT_API_RATE_LIMITS: 'off',
    };
    const audit = await cli(
      ['audit', '--sample', '15', '--table', 'tickets', '--json', '--no-local-worker'],
      env,
    );
    expect(audit.stderr).toContain('auditing 15 rows of tickets');
    expect(audit.code).toBe(0);
    const result = JSON.parse(audit.stdout.trim().split('\n').at(-1)!);
    expect(result.tables).toEqual({
      tickets: expect.objectContaining({ sampled: 15, differs: 0, share: 0 }),
    });
    expect(result.requests).toEqual({ detail: 15 });

    const status = await cli(['status'], env);
    expect(status.code).toBe(0);
    const lines = status.stdout.split('\n');
    const heading = lines.findIndex((l) => l.startsWith('Audit (rows re-read from the live API'));
    expect(heading).toBeGreaterThan(0);
    // Both audits together: 6 tickets of the run, 15 on demand.
    process.stderr.write(`${lines.slice(heading).join('\n')}\n`);
    expect(lines.slice(heading).find((l) => l.trim().startsWith('tickets'))).toMatch(
      /tickets\s+sampled\s+21\s+differ\s+0 \(0\.0 %\)\s+95 % upper bound\s+13\.3 %/,
    );

    const bad = await cli(['audit', '--sample', '5', '--table', 'views'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"views" is not an audited table');
  });
});

describe('under a column policy (hashed and dropped fields)', () => {
  let p: Pipeline;
  beforeAll(async () => {
    p = await startPipeline('e2e_audit_policy', {
      companion: { seed: 41, tickets: 12 },
      env: {
        SYNC_THREAD_REVERIFY_PER_RUN: '0',
        SUPPORT_API_RATE_LIMITS: 'list=100,detail=100,analytics=100,directory=100',
        SUPPORT_API_RATE_WINDOW: 'PT1S',
        SYNC_AUDIT_SHARE: '1',
        SYNC_COLUMN_POLICY: 'tickets.contact_email=hash,ticket_messages.text=drop',
        SYNC_HASH_KEY: 'audit-test-hash-key-0123456789abcdef',
      },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('compares the source through the policy: 0 differences, and a wrong hash shows as two hashes', async () => {
    // Before the audit judged through the destination's written spec, every hashed or dropped field of
    // every sampled row "differed" from the plain value the source serves.
    const first = await run(p);
    expect(first.audit).toMatchObject({ differs: 0 });
    expect(first.audit!.tables['tickets']!.sampled).toBeGreaterThan(0);
    expect(first.audit!.tables['ticket_messages']!.sampled).toBeGreaterThan(0);

    const ticket = (
      await p.db.query(
        `SELECT id, contact_email FROM support.tickets WHERE _deleted_at IS NULL AND contact_email IS NOT NULL ORDER BY ticket_number LIMIT 1`,
      )
    ).rows[0];
    expect(ticket.contact_email).toMatch(/^[0-9a-f]{64}$/);
    const wrong = 'f'.repeat(64);
    await p.db.query(
      `UPDATE support.tickets SET contact_email = $2::text, _raw = jsonb_set(_raw, '{contact,email}', to_jsonb($2::text)) WHERE id = $1`,
      [ticket.id, wrong],
    );
    const second = await run(p);
    const found = (await auditRows(p, second.run_id)).filter((r) => r.verdict === 'differs');
    expect(found.map((r) => r.row_id)).toEqual([ticket.id]);
    const differences = JSON.parse(found[0]!.differences!) as {
      field: string;
      warehouse: unknown;
      source: unknown;
    }[];
    expect(differences.map((d) => d.field)).toContain('contact_email');
    for (const d of differences) {
      // No plain e-mail address reaches _audit: both sides are the policy's hashes.
      expect(String(d.warehouse)).not.toContain('@');
      expect(String(d.source)).not.toContain('@');
    }
    expect(differences.find((d) => d.field === 'contact_email')).toEqual({
      field: 'contact_email',
      warehouse: wrong,
      source: ticket.contact_email,
    });
    // Healed: the stored hash is the policy's again.
    const healed = await p.db.query('SELECT contact_email FROM support.tickets WHERE id = $1', [ticket.id]);
    expect(healed.rows[0].contact_email).toBe(ticket.contact_email);
  });
});
