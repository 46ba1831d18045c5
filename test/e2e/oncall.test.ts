import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settingsFromConfig } from '../../worker/config.js';
import { newRunId, runSync } from '../../worker/run-sync.js';
import { testTemporalAddress } from '../support/temporal.js';
import { cli } from './cli.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource } from './warehouse-compare.js';

/**
 * Issue 12: a window fails at night; on-call finds it (`status --failed`: code, request id, UI link, replay
 * command), re-runs exactly that window — once as the UI's Reset does, once with `replay` — and the
 * warehouse, the ledger and the coverage view are right afterwards.
 */
describe('on-call: a failed window found, understood and replayed', () => {
  let p: Pipeline;
  let env: Record<string, string>;
  beforeAll(async () => {
    p = await startPipeline('e2e_oncall', { companion: { seed: 19, tickets: 60 } });
    env = {
      SUPPORT_API_URL: p.companion.baseUrl,
      SUPPORT_API_KEY: p.companion.keys.admin,
      DESTINATION_URL: p.databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: p.taskQueue,
      TEMPORAL_UI_URL: 'http://ui.example:8233',
      SUPPORT_API_RATE_LIMITS: 'off',
    };
  });
  afterAll(async () => {
    await p?.close();
  });

  const ledger = async (workflowId: string) =>
    (
      await p.db.query(
        'SELECT run_id, status, error FROM support._sync_runs WHERE workflow_id = $1 ORDER BY started_at',
        [workflowId],
      )
    ).rows as { run_id: string; status: string; error: string | null }[];
  const gaps = async (pass: string) => {
    const r = await p.db.query(
      'SELECT covered_from, covered_until FROM support.sync_coverage WHERE pass = $1',
      [pass],
    );
    return r.rows.length; // merged intervals: one means no gap
  };

  it('finds the window with code, request id, UI link and replay command; Reset and replay make it green', async () => {
    // The second 90-day window of the sessions export answers 400 to every request (a permanent error).
    const w2Start = new Date(Date.parse(p.config.SYNC_START_DATE!) + 90 * DAY_MS).toISOString();
    const w2End = new Date(Date.parse(w2Start) + 90 * DAY_MS).toISOString();
    p.companion.setOptions({
      faults: {
        rate: 0,
        kinds: [],
        reject: [
          { path: '/agent-sessions', query: { from: w2Start }, status: 400, code: 'VALIDATION_ERROR' },
        ],
      },
    });
    const failedAt = Date.now();
    const summary = await p.run('incremental');
    expect(summary.status).toBe('failed');
    const workflowId = `agent_sessions/${w2Start}/${w2End}`;
    expect(summary.error).toContain(workflowId);

    // Find it.
    const found = await cli(['status', '--failed'], env);
    console.info(`oncall: status --failed printed\n${found.stdout}`);
    expect(found.code).toBe(1);
    expect(found.stdout).toContain(workflowId);
    expect(found.stdout).toMatch(/400 VALIDATION_ERROR, request_id req_\S+; 1 attempt/);
    expect(found.stdout).toContain(
      `http://ui.example:8233/namespaces/default/workflows/${encodeURIComponent(workflowId)}`,
    );
    expect(found.stdout).toContain(`npm run cli -- replay '${workflowId}' --wait`);
    expect(await ledger(workflowId)).toMatchObject([{ status: 'failed' }]);

    // A BI or on-call role with SELECT alone can ask too: status runs no DDL.
    const reader = `reader_${randomUUID().slice(0, 8)}`;
    await p.db.query(`CREATE ROLE ${reader} LOGIN PASSWORD 'reader-pw'`);
    await p.db.query(`GRANT USAGE ON SCHEMA support TO ${reader}`);
    await p.db.query(`GRANT SELECT ON ALL TABLES IN SCHEMA support TO ${reader}`);
    const readerUrl = new URL(p.databaseUrl);
    readerUrl.username = reader;
    readerUrl.password = 'reader-pw';
    const readOnly = await cli(['status', '--failed'], { ...env, DESTINATION_URL: readerUrl.toString() });
    expect({ code: readOnly.code, stderr: readOnly.stderr }).toEqual({ code: 1, stderr: '' });
    expect(readOnly.stdout).toBe(found.stdout);
    const plain = await cli(['status'], { ...env, DESTINATION_URL: readerUrl.toString() });
    expect({ code: plain.code, stderr: plain.stderr }).toMatchObject({ code: 0 });

    // The source is fixed. Replay 1: exactly what the UI's Reset does (to the first workflow task).
    p.companion.setOptions({ faults: undefined });
    const handle = p.env.client.workflow.getHandle(workflowId);
    const failedRun = (await handle.describe()).runId;
    const history = await handle.fetchHistory();
    const firstTask = history.events!.find((e) => e.workflowTaskCompletedEventAttributes)!;
    const reset: { runId?: string | null } = await p.env.client.workflowService.resetWorkflowExecution({
      namespace: 'default',
      workflowExecution: { workflowId, runId: failedRun },
      reason: 'on-call: the source is fixed',
      workflowTaskFinishEventId: firstTask.eventId ?? null,
      requestId: randomUUID(),
    });
    await p.env.client.workflow.getHandle(workflowId, reset.runId!).result();
    const greenAt = Date.now();
    let attempts = await ledger(workflowId);
    expect(attempts.map((a) => a.status)).toEqual(['failed', 'succeeded']);
    expect((await cli(['status', '--failed'], env)).stdout).toContain('No failed window left uncovered.');
    await expectWarehouseEqualsSource(
      p.db,
      await sourceSnapshot(p.deps.client, new Date(Date.now() - 500 * DAY_MS).toISOString()),
    );
    expect(await gaps('agent_sessions')).toBe(1);
    console.info(
      `oncall: failure to green window ${((greenAt - failedAt) / 1000).toFixed(1)} s (run, status --failed, reset)`,
    );

    // Replay 2: the CLI, by stream and window; the live high-water mark does not move back.
    const markBefore = await p.deps.destination.readCheckpoint('agent_sessions', 'hwm');
    const replayed = await cli(
      [
        'replay',
        '--stream',
        'agent_sessions',
        '--window',
        `${w2Start}/${w2End}`,
        '--wait',
        '--no-local-worker',
      ],
      env,
    );
    console.info(`oncall: replay printed\n${replayed.stderr}${replayed.stdout}`);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(JSON.parse(replayed.stdout.trim().split('\n').at(-1)!)).toMatchObject({
      status: 'succeeded',
      workflow_id: workflowId,
    });
    attempts = await ledger(workflowId);
    expect(attempts.map((a) => a.status)).toEqual(['failed', 'succeeded', 'succeeded']);
    expect(await p.deps.destination.readCheckpoint('agent_sessions', 'hwm')).toEqual(markBefore);
    await expectWarehouseEqualsSource(
      p.db,
      await sourceSnapshot(p.deps.client, new Date(Date.now() - 500 * DAY_MS).toISOString()),
    );
    expect(await gaps('agent_sessions')).toBe(1);
  });

  it('a backfill run again skips the windows it completed, unless forced', async () => {
    const range = {
      from: new Date(Date.now() - 180 * DAY_MS).toISOString(),
      before: new Date(Date.now() - 30 * DAY_MS).toISOString(),
    };
    const backfill = async (force: boolean) => {
      p.companion.clearRequestLog();
      const now = new Date();
      const summary = await runSync(p.env.client, p.taskQueue, {
        runId: newRunId(now),
        mode: 'backfill',
        streams: ['csat_surveys', 'agent_sessions'],
        settings: settingsFromConfig(p.config, now),
        range,
        ...(force ? { force } : {}),
      });
      expect(summary.status).toBe('succeeded');
      return p.companion.requestLog.filter((r) => /csat-surveys|agent-sessions/.test(r.path)).length;
    };
    expect(await backfill(false)).toBeGreaterThan(0);
    expect(await backfill(false)).toBe(0); // the same command again: every window is done
    expect(await backfill(true)).toBeGreaterThan(0);
  });

  it('status on a warehouse an older version prepared names the missing table and the sync that migrates it', async () => {
    await p.deps.destination.prepare(); // the warehouse as a sync leaves it, whichever cases ran before
    await p.db.query('ALTER TABLE support._reread_queue RENAME TO _reread_queue_aside');
    try {
      const r = await cli(['status'], env);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('the warehouse has no _reread_queue table yet');
      expect(r.stderr).toContain('npm run sync -- --once');
    } finally {
      await p.db.query('ALTER TABLE support._reread_queue_aside RENAME TO _reread_queue');
    }
  });

  it('replay refuses a window that is running, and a name that is not a window', async () => {
    const bad = await cli(['replay', 'tickets/nope', '--no-local-worker'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/not an export window id/);
    // A window running on a queue nobody polls stays running.
    const from = '2026-01-01T00:00:00.000Z';
    const before = '2026-02-01T00:00:00.000Z';
    const workflowId = `csat_surveys.sent/${from}/${before}`;
    const running = await p.env.client.workflow.start('exportWindowWorkflow', {
      taskQueue: `${p.taskQueue}-nobody`,
      workflowId,
      args: [{}],
    });
    try {
      const refused = await cli(['replay', workflowId, '--no-local-worker'], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`${workflowId} is running`);
    } finally {
      await running.terminate('test over');
    }
  });
});
