import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isReadByTheRun } from '../../schemas/workflow-names.js';
import { DAY_MS, type Pipeline, startPipeline, workflowBundle } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource, rowCounts, warehouseRows } from './warehouse-compare.js';

const threadRequests = (p: Pipeline) =>
  new Set(
    p.companion.requestLog
      .filter((r) => r.method === 'GET' && /^\/public\/v1\/tickets\/\d+\/messages$/.test(r.path))
      .map((r) => Number(r.path.split('/')[4])),
  );

describe('the pipeline on Temporal: full and incremental sync of a seeded world', () => {
  let p: Pipeline;
  const from = () => new Date(Date.now() - 200 * DAY_MS).toISOString();

  beforeAll(async () => {
    // A 30-day look-back so recent tickets are inside the incremental range.
    p = await startPipeline('e2e_sync', { env: { SYNC_LOOKBACK: 'P30D' } });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('a full first sync makes every table equal to the source', async () => {
    const summary = await p.run('incremental');
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    await expectWarehouseEqualsSource(p.db, await sourceSnapshot(p.deps.client, from()));
    const runs = await p.db.query(`SELECT status FROM support._sync_runs WHERE run_id = $1`, [
      summary.run_id,
    ]);
    expect(runs.rows).toEqual([{ status: 'succeeded' }]);
    // SYNC_START_DATE is before the oldest ticket: once this run's sweep found that ticket, the sent pass
    // covered the submitted one (issue 22) — none of its requests; the next test's answers still arrive.
    const csat = p.companion.requestLog.filter((r) => r.path === '/public/v1/csat-surveys');
    expect(csat.length).toBeGreaterThan(0);
    expect(csat.filter((r) => 'submitted_from' in r.query)).toEqual([]);
  });

  it('an incremental run after mutations brings it equal again, fetching threads only for changed tickets', async () => {
    const world = p.companion.world;
    const now = Date.now();
    const recent = world
      .ticketsSorted(world.orgA.id)
      .filter((t) => !t.deletedAt && t.createdAt > now - 20 * DAY_MS && t.ticketType === 'regular');
    expect(recent.length).toBeGreaterThanOrEqual(3);
    const [statusChanged, messaged] = recent;
    world.setTicketStatus(statusChanged!.number, statusChanged!.status === 'resolved' ? 'open' : 'resolved');
    world.addMessage(messaged!.number, { role: 'customer', text: 'Any news on this?' });
    const created = world.createTicket({
      channel: 'email',
      subject: 'New one',
      messages: [{ role: 'customer', text: 'Hello' }],
    });
    const unanswered = world.surveys.find(
      (s) => s.submittedAt === null && s.sentAt / 1000 > now - 60 * DAY_MS,
    );
    if (unanswered) world.answerSurvey(unanswered.id, 2, 'late answer');
    const open = world.sessions.find((s) => s.end === null);
    if (open) world.endSession(open.id);
    p.companion.clearRequestLog();

    // Without the rolling re-read of unchanged threads (tested in exactness.test.ts).
    const summary = await p.run('incremental', { threadReverifyPerRun: 0 });
    expect(summary.status).toBe('succeeded');
    expect([...threadRequests(p)].sort((a, b) => a - b)).toEqual(
      [statusChanged!.number, messaged!.number, created.number].sort((a, b) => a - b),
    );
    await expectWarehouseEqualsSource(p.db, await sourceSnapshot(p.deps.client, from()));
  });

  it('brings a message that did not move updated_at within the thread look-back', async () => {
    p.companion.setOptions({ messageBumpsTicketUpdatedAt: false });
    const world = p.companion.world;
    const ticket = world
      .ticketsSorted(world.orgA.id)
      .filter((t) => !t.deletedAt && t.createdAt > Date.now() - 5 * DAY_MS)
      .at(-1)!;
    const before = ticket.updatedAt;
    const message = world.addMessage(ticket.number, { role: 'customer', text: 'quiet message' });
    expect(ticket.updatedAt).toBe(before);
    // Without a thread look-back (nor the rolling re-read), the message is not fetched (the ticket looks
    // unchanged)…
    await p.run('incremental', { threadLookbackMs: 0, threadReverifyPerRun: 0 });
    expect((await warehouseRows(p.db, 'ticket_messages')).has(message.id)).toBe(false);
    // …with a look-back covering the ticket's creation, the next run brings it.
    await p.run('incremental', { threadLookbackMs: 7 * DAY_MS, threadReverifyPerRun: 0 });
    expect((await warehouseRows(p.db, 'ticket_messages')).has(message.id)).toBe(true);
    p.companion.setOptions({ messageBumpsTicketUpdatedAt: true });
  });

  it('a full refresh marks a ticket deleted in the source as deleted, without losing its row', async () => {
    const world = p.companion.world;
    // A ticket with a CSAT survey: the export stops serving it too (spec 2.7 rule 7).
    const survey = world.surveys.find((s) => {
      const t = world.tickets[s.ticketIdx];
      return t && !t.deletedAt && s.sentAt / 1000 > Date.now() - 150 * DAY_MS;
    })!;
    const victim = world.tickets[survey.ticketIdx]!;
    world.deleteTicket(victim.number);
    const summary = await p.run('full_refresh');
    expect(summary.status).toBe('succeeded');
    const row = await p.db.query('SELECT _deleted_at FROM support.tickets WHERE id = $1', [victim.id]);
    expect(row.rows[0]._deleted_at).toBeInstanceOf(Date);
    const surveyRow = await p.db.query('SELECT _deleted_at FROM support.csat_surveys WHERE id = $1', [
      survey.id,
    ]);
    expect(surveyRow.rows[0]._deleted_at).toBeInstanceOf(Date);
    const messages = await p.db.query(
      'SELECT count(*)::int AS n FROM support.ticket_messages WHERE ticket_id = $1 AND _deleted_at IS NULL',
      [victim.id],
    );
    expect(messages.rows[0].n).toBe(0);
    await expectWarehouseEqualsSource(p.db, await sourceSnapshot(p.deps.client, from()));
  });

  it('replaying a completed window (same workflow id, new run) is idempotent', async () => {
    const before = await rowCounts(p.db);
    const snapshot = await p.db.query('SELECT id, _raw FROM support.csat_surveys ORDER BY id');
    const window = await p.db.query(
      `SELECT workflow_id FROM support._sync_runs WHERE stream = 'csat_surveys' AND status = 'succeeded' ORDER BY started_at LIMIT 1`,
    );
    const workflowId: string = window.rows[0].workflow_id;
    const [pass, windowStart, windowEnd] = workflowId.split('/') as [string, string, string];
    const handle = p.env.client.workflow.getHandle(workflowId);
    const firstRun = (await handle.describe()).runId;
    const result = await p.env.client.workflow.execute('exportWindowWorkflow', {
      taskQueue: p.taskQueue,
      workflowId,
      args: [
        {
          runId: 'replay-test',
          mode: 'replay',
          pass,
          windowStart,
          windowEnd,
          pageSize: 100,
          analyticsTaskQueue: `${p.taskQueue}-analytics`,
          includeComments: true,
        },
      ],
    });
    expect((result as { pages: number }).pages).toBeGreaterThan(0);
    expect((await p.env.client.workflow.getHandle(workflowId).describe()).runId).not.toBe(firstRun);
    expect(await rowCounts(p.db)).toEqual(before);
    expect((await p.db.query('SELECT id, _raw FROM support.csat_surveys ORDER BY id')).rows).toEqual(
      snapshot.rows,
    );
  });

  it('recorded workflow histories replay deterministically', async () => {
    const runs = await p.db.query(`SELECT DISTINCT workflow_id, stream FROM support._sync_runs LIMIT 40`);
    const histories = [];
    // A window its run read itself (a reference snapshot) is in the run's history, not a workflow of its own.
    const workflows = runs.rows.filter((r) => r.stream === null || !isReadByTheRun(r.stream));
    for (const { workflow_id } of workflows.slice(0, 25)) {
      const handle = p.env.client.workflow.getHandle(workflow_id);
      histories.push({ workflowId: workflow_id, history: await handle.fetchHistory() });
    }
    expect(histories.length).toBeGreaterThan(5);
    const result = await Worker.runReplayHistories({ workflowBundle: await workflowBundle() }, histories);
    for await (const r of result)
      expect({ id: r.workflowId, error: r.error?.message }).toEqual({ id: r.workflowId, error: undefined });
  });
});
