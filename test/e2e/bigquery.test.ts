import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanionHandle, startCompanion } from '../../companion/index.js';
import { BigQueryDestination, emulatorClientOptions } from '../../connectors/bigquery/destination.js';
import { FLUSH_SCRIPT_MARK } from '../../connectors/bigquery/flush.js';
import { fieldColumnName } from '../../schemas/custom-fields-view.js';
import { type BigQueryEmulator, startBigQueryEmulator } from '../../scripts/bigquery-emulator.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig } from '../../worker/config.js';
import { type BigQueryQuotaProxy, startBigQueryQuotaProxy } from '../support/bigquery-quota-proxy.js';
import { inCampaign, sized } from '../support/campaign.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';
import { duplicateIds, expectBigQueryEqualsSource } from './bigquery-compare.js';
import { DAY_MS, type Pipeline, silentLogger, startPipeline } from './harness.js';
import { COMPARED_TABLES, sourceSnapshot } from './source-snapshot.js';
import { incrementalRunInput, killed, spawnWorker, startRun } from './worker-process.js';

/**
 * The deletion mark of one row: `{ deletedAt }` (an ISO time, or null for a live row), or undefined when
 * the table holds no row with that id — so a check that a row was kept fails when it is gone.
 */
async function deletionMark(
  bq: BigQuery,
  dataset: string,
  table: string,
  id: string,
): Promise<{ deletedAt: string | null } | undefined> {
  const [rows] = await bq.query({
    query: `SELECT _deleted_at FROM \`${dataset}\`.\`${table}\` WHERE id = @id`,
    params: { id },
  });
  const found = rows as { _deleted_at: { value: string } | null }[];
  if (found.length > 1) throw new Error(`${table} holds ${found.length} rows with id ${id}`);
  const row = found[0];
  return row && { deletedAt: row._deleted_at?.value ?? null };
}

/** One saved KPI query (new tickets over the last 60 days). */
function reportQueriesFile(): string {
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const file = join(mkdtempSync(join(tmpdir(), 'bq-report-queries-')), 'queries.yaml');
  writeFileSync(
    file,
    `- name: new-tickets\n  timezone: UTC\n  query: |\n    FROM tickets\n    SHOW new_tickets\n    SINCE ${day(Date.now() - 60 * DAY_MS)} UNTIL ${day(Date.now())}\n    VISUALIZE new_tickets TYPE kpi\n`,
  );
  return file;
}

describe('the pipeline into BigQuery (bqemulator), end to end', () => {
  let emulator: BigQueryEmulator;
  let proxy: BigQueryQuotaProxy;
  let p: Pipeline;
  let bq: BigQuery;
  const dataset = `e2e_${randomBytes(4).toString('hex')}`;
  const from = () => new Date(Date.now() - 200 * DAY_MS).toISOString();
  const noDuplicates = Object.fromEntries(COMPARED_TABLES.map((t) => [t, 0]));
  /** Flush scripts the proxy saw (connectors/bigquery/flush.ts: each begins with its mark). */
  let flushScripts = 0;

  beforeAll(async () => {
    emulator = await startBigQueryEmulator({ log: (l) => process.stderr.write(`[bigquery-e2e] ${l}\n`) });
    // BigQuery's per-table limits kept in front of the emulator: a job that breaks one fails the run.
    proxy = await startBigQueryQuotaProxy(emulator.endpoint, {
      enforce: true,
      minJobMs: 200,
      onQuery: (sql) => {
        if (sql.startsWith(FLUSH_SCRIPT_MARK)) flushScripts += 1;
      },
    });
    p = await startPipeline('e2e_bigquery', {
      companion: { seed: 23, tickets: 40, rateLimits: false },
      env: {
        DESTINATION_URL: `bigquery://${emulator.projectId}/${dataset}`,
        BIGQUERY_API_ENDPOINT: proxy.endpoint,
        BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint,
        SYNC_LOOKBACK: 'P30D',
        REPORT_QUERIES: reportQueriesFile(),
      },
    });
    bq = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.endpoint) });
  }, 600_000);
  afterAll(async () => {
    await p?.close();
    await proxy?.stop();
    await emulator?.stop();
  });

  it('the configured destination is BigQuery on the emulator', () => {
    expect(p.deps.destination).toBeInstanceOf(BigQueryDestination);
  });

  it('a full first sync makes every table equal to the source', async () => {
    const summary = await p.run('incremental');
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    expect(proxy.report().violations).toEqual([]);
    await expectBigQueryEqualsSource(bq, dataset, await sourceSnapshot(p.deps.client, from()));
    expect(await duplicateIds(bq, dataset)).toEqual(noDuplicates);
    const runs = await p.deps.destination.bookkeeping.listRuns(100);
    expect(runs.find((r) => r.run_id === summary.run_id)?.status).toBe('succeeded');
    // The reconciliation ran against BigQuery too, found the source's numbers, and wrote them.
    expect(summary.reconciliation).toMatchObject({ mismatch: 0 });
    expect(summary.reconciliation?.error).toBeUndefined();
    const checked = await p.deps.destination.bookkeeping.listReconciliation(summary.run_id);
    // The tie-out on BigQuery: the 14 complete UTC days and the run's day so far, every metric compared.
    expect(checked.filter((r) => r.metric === 'new_tickets')).toHaveLength(15);
    for (const m of [
      'resolved_tickets',
      'reopened_tickets',
      'customer_first_response_time',
      'csat_average',
      'agent_online_time',
      'backlog_now',
    ])
      expect(checked.filter((r) => r.metric === m).length, m).toBeGreaterThan(0);
    expect(checked.filter((r) => r.status === 'mismatch' || r.status === 'moving')).toEqual([]);
    expect(checked.filter((r) => r.status === 'equal').length).toBe(summary.reconciliation?.equal);
    // The report snapshot and its values were written together (one transaction) with the query's checkpoint.
    const [snapshots] = await bq.query(
      `SELECT snapshot_id, kind, value_count, TO_JSON_STRING(_raw) AS raw FROM \`${dataset}\`.report_snapshots`,
    );
    expect((snapshots as { kind: string }[]).map((s) => s.kind)).toEqual(['kpi']);
    const snapshot = (snapshots as { snapshot_id: string; value_count: number; raw: string }[])[0]!;
    const query = p.config.REPORT_QUERIES!.queries[0]!;
    const answer = await p.deps.client.queryReport({ query: query.query, timezone: query.timezone });
    expect(JSON.parse(snapshot.raw).value).toBe((answer as { value: number }).value);
    const [values] = await bq.query(
      `SELECT measure_key, value FROM \`${dataset}\`.report_snapshot_values WHERE snapshot_id = '${snapshot.snapshot_id}' ORDER BY value_index`,
    );
    expect((values as { measure_key: string }[]).map((v) => v.measure_key)).toEqual([
      'value',
      'previous_value',
    ]);
    expect(Number(snapshot.value_count)).toBe(2);
    expect((await p.deps.destination.readCheckpoint('report_snapshots', 'new-tickets'))?.status).toBe(
      'complete',
    );
    // The thread queue is drained.
    expect(await p.deps.destination.listCheckpoints({ threadQueue: true, status: 'running' })).toEqual([]);
    // Schema drift: the workspace's custom fields recorded once, and a typed column each.
    const fields = p.companion.world.ticketFields.filter((f) => f.orgId === p.companion.world.orgA.id);
    const drift = await p.deps.destination.bookkeeping.listSchemaChanges();
    expect(drift.map((c) => [c.kind, c.field_path, c.runs_seen]).sort()).toEqual(
      fields.map((f) => ['new_custom_field', `ticket_fields.${f.id}`, 1]).sort(),
    );
    expect(summary.schema_changes).toMatchObject({
      recorded: fields.length,
      customFieldColumns: fields.length,
    });
    const refund = fields.findIndex((f) => f.name === 'Refund amount');
    const warranty = fields.findIndex((f) => f.name === 'Warranty');
    // Columns named by the field id and the type of its values, never the label.
    const [custom] = await bq.query(
      `SELECT ticket_number, ${fieldColumnName(fields[refund]!.id, 'number')} AS refund_amount, ${fieldColumnName(fields[warranty]!.id, 'boolean')} AS warranty FROM \`${dataset}\`.ticket_custom_fields`,
    );
    const live = p.companion.world.tickets.filter(
      (t) => t.orgId === p.companion.world.orgA.id && !t.deletedAt,
    );
    expect(
      (custom as { ticket_number: number; refund_amount: number | null; warranty: boolean | null }[])
        .map((r) => [Number(r.ticket_number), r.refund_amount, r.warranty])
        .sort((a, b) => Number(a[0]) - Number(b[0])),
    ).toEqual(
      live
        .map((t) => [t.number, t.fieldValues[refund] ?? null, t.fieldValues[warranty] ?? null])
        .sort((a, b) => Number(a[0]) - Number(b[0])),
    );
  }, 300_000);

  it("a no-change run's checkpoint reads do not grow with the threads it re-reads", async () => {
    // A run that changes nothing should cost BigQuery jobs per table and window, not per thread: a thread's
    // first page that read its queue entry from the warehouse (_sync_state with the staged entries over it)
    // would be one query of three tables per thread. Two no-change runs, one re-reading (almost) no thread
    // and one re-reading every thread, as the quota proxy counts their jobs.
    const noChangeRun = async (settings: { threadLookbackMs: number; threadReverifyPerRun: number }) => {
      proxy.reset();
      flushScripts = 0;
      const startedAt = Date.now();
      const summary = await p.run('incremental', settings);
      expect(summary.error).toBeUndefined();
      expect(summary.status).toBe('succeeded');
      const report = proxy.report();
      expect(report.violations).toEqual([]);
      const read = (
        await p.deps.destination.listCheckpoints({ threadQueue: true, status: 'complete' })
      ).filter((cp) => Date.parse(cp.updated_at) >= startedAt - 1000);
      return {
        threads: read.length,
        queryJobs: report.queryJobs,
        checkpointReads: report.tables['_sync_state']?.readJobs ?? 0,
        // Checkpoint reads by table reads (tabledata.list pages), billed nothing.
        stateTableReads: report.tables['_sync_state']?.tableReads ?? 0,
        // Rows the re-read threads staged: none of them changed (the per-run version cache).
        messageRows: summary.streams['ticket_messages']?.rows ?? 0,
        flushes: flushScripts,
        billedMiB: Math.round(report.billedBytesEstimate / 2 ** 20),
      };
    };
    const few = await noChangeRun({ threadLookbackMs: 0, threadReverifyPerRun: 0 });
    const all = await noChangeRun({ threadLookbackMs: 400 * DAY_MS, threadReverifyPerRun: 100 });
    process.stderr.write(`[bigquery-e2e] no-change runs: ${JSON.stringify({ few, all })}\n`);
    expect(all.threads - few.threads, 'the second run re-read every thread').toBeGreaterThanOrEqual(25);
    // A few more listings of the queue, never a read per thread.
    expect(all.checkpointReads - few.checkpointReads).toBeLessThanOrEqual(8);
    expect(all.queryJobs - few.queryJobs).toBeLessThanOrEqual(14);
    // Re-reading every thread of an unchanged world stages no message and so never flushes per thread.
    // Flushes asked for while one waits share it (flush.ts flushSince), so either run may save one or two
    // by timing: the bound leaves room for that, not for a flush per thread.
    expect(all.messageRows).toBe(0);
    expect(all.flushes - few.flushes).toBeLessThanOrEqual(3);
    expect(all.stateTableReads).toBeGreaterThan(0);
    await expectBigQueryEqualsSource(bq, dataset, await sourceSnapshot(p.deps.client, from()));
  }, 600_000);

  it('an incremental run after world mutations brings it equal again', async () => {
    const world = p.companion.world;
    const now = Date.now();
    const recent = world
      .ticketsSorted(world.orgA.id)
      .filter((t) => !t.deletedAt && t.createdAt > now - 20 * DAY_MS && t.ticketType === 'regular');
    expect(recent.length).toBeGreaterThanOrEqual(2);
    const [statusChanged, messaged] = recent;
    world.setTicketStatus(statusChanged!.number, statusChanged!.status === 'resolved' ? 'open' : 'resolved');
    world.addMessage(messaged!.number, { role: 'customer', text: 'Any news on this? ünïcødé ✓' });
    world.createTicket({
      channel: 'email',
      subject: 'New one',
      messages: [{ role: 'customer', text: 'Hi' }],
    });
    const unanswered = world.surveys.find(
      (s) => s.submittedAt === null && s.sentAt / 1000 > now - 60 * DAY_MS,
    );
    if (unanswered) world.answerSurvey(unanswered.id, 2, 'late answer');
    const open = world.sessions.find((s) => s.end === null);
    if (open) world.endSession(open.id);

    const summary = await p.run('incremental');
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    await expectBigQueryEqualsSource(bq, dataset, await sourceSnapshot(p.deps.client, from()));
    expect(await duplicateIds(bq, dataset)).toEqual(noDuplicates);
    expect(proxy.report().violations).toEqual([]);
  }, 300_000);

  // What it rests on runs in the suite on the emulator: the conformance suite's deletion marks, children
  // following a deleted parent and full refreshes over a range (test/destinations/bigquery.test.ts); the
  // scenario through the pipeline on PostgreSQL: test/e2e/exactness.test.ts. Whole, through the pipeline on
  // BigQuery, in `npm run campaign`: it took 78 s of the BigQuery lane.
  it.runIf(inCampaign())(
    'a full refresh marks a ticket deleted in the source as deleted, keeping its row',
    async () => {
      const world = p.companion.world;
      const victim = world
        .ticketsSorted(world.orgA.id)
        .find((t) => !t.deletedAt && t.ticketType === 'regular' && world.messagesOf(t).length > 0)!;
      const before = await deletionMark(bq, dataset, 'tickets', victim.id);
      expect(before, 'the victim was synced, live').toEqual({ deletedAt: null });
      const messagesOfVictim = async () =>
        (
          await bq.query({
            query: `SELECT COUNTIF(_deleted_at IS NULL) AS live, COUNT(*) AS kept FROM \`${dataset}\`.ticket_messages WHERE ticket_id = @id`,
            params: { id: victim.id },
          })
        )[0] as { live: number; kept: number }[];
      const [synced] = await messagesOfVictim();
      expect(synced!.kept, 'its thread was synced').toBeGreaterThan(0);
      expect(synced!.live).toBe(synced!.kept);
      const startedAt = Date.now();
      world.deleteTicket(victim.number);
      const summary = await p.run('full_refresh');
      expect(summary.error).toBeUndefined();
      expect(summary.status).toBe('succeeded');
      // The row is still there (never a hard delete), marked by this run.
      const mark = await deletionMark(bq, dataset, 'tickets', victim.id);
      expect(mark, 'the deleted ticket keeps its row').toBeDefined();
      expect(mark!.deletedAt, 'the kept row is marked deleted').not.toBeNull();
      expect(Date.parse(mark!.deletedAt!)).toBeGreaterThanOrEqual(startedAt - 1000);
      // Its messages follow it, kept and marked too.
      expect(await messagesOfVictim()).toEqual([{ live: 0, kept: synced!.kept }]);
      await expectBigQueryEqualsSource(bq, dataset, await sourceSnapshot(p.deps.client, from()));
      expect(await duplicateIds(bq, dataset)).toEqual(noDuplicates);
      expect(proxy.report().violations).toEqual([]);
    },
    300_000,
  );

  // The same scenario through the pipeline on PostgreSQL: test/e2e/exactness.test.ts; a survey following its
  // ticket out and back on BigQuery: the conformance suite (test/destinations/bigquery.test.ts). Two more
  // runs here, in `npm run campaign` (test/support/campaign.ts).
  it.runIf(inCampaign())(
    "a deleted ticket's CSAT survey follows it out, and comes back with it",
    async () => {
      const world = p.companion.world;
      // A survey the export serves now (spec 2.7 rule 7: it stops serving surveys of deleted tickets), sent
      // well inside the synced history (SYNC_START_DATE is 200 days back).
      const survey = world.surveys.find((s) => {
        const t = world.tickets[s.ticketIdx];
        const sentRecently = s.sentAt / 1000 > Date.now() - 150 * DAY_MS;
        return t && t.orgId === world.orgA.id && !t.deletedAt && t.ticketType === 'regular' && sentRecently;
      })!;
      expect(survey, 'a live ticket with a survey').toBeDefined();
      const ticket = world.tickets[survey.ticketIdx]!;
      expect(await deletionMark(bq, dataset, 'csat_surveys', survey.id)).toEqual({ deletedAt: null });

      world.deleteTicket(ticket.number);
      expect((await p.run('incremental')).status).toBe('succeeded');
      const ticketGone = await deletionMark(bq, dataset, 'tickets', ticket.id);
      const surveyGone = await deletionMark(bq, dataset, 'csat_surveys', survey.id);
      expect(ticketGone?.deletedAt, 'the ticket is marked deleted').toEqual(expect.any(String));
      expect(surveyGone?.deletedAt, 'its survey is marked deleted, its row kept').toEqual(expect.any(String));
      await expectBigQueryEqualsSource(bq, dataset, await sourceSnapshot(p.deps.client, from()));

      world.restoreTicket(ticket.number);
      expect((await p.run('incremental')).status).toBe('succeeded');
      expect(await deletionMark(bq, dataset, 'tickets', ticket.id)).toEqual({ deletedAt: null });
      expect(await deletionMark(bq, dataset, 'csat_surveys', survey.id)).toEqual({ deletedAt: null });
      await expectBigQueryEqualsSource(bq, dataset, await sourceSnapshot(p.deps.client, from()));
      expect(await duplicateIds(bq, dataset)).toEqual(noDuplicates);
      expect(proxy.report().violations).toEqual([]);
    },
    300_000,
  );

  it('the emulator answered every request of these runs as BigQuery would', () => {
    // None failed on an exception of the emulator's own (an "internal error"), which ends a run incomplete
    // for a reason BigQuery would not give.
    expect(emulator.internalErrors(), 'requests the emulator answered with its own internal error').toBe(0);
  });
});

/**
 * Kills inside flushes, in `npm run campaign` (test/support/campaign.ts): two, the second at a flush of the
 * worker that replaced the first. The test suite runs what each part of it rests on, in less than a tenth
 * of its time (it took a minute of the BigQuery lane, two worker processes started): a flush that dies
 * after its script, before recording its batches merged, merges them again to the same result, and one
 * that dies before the merge is run again whole (test/destinations/bigquery-staging.test.ts); a worker
 * killed at random points has its activities retried on the next one, and the run ends exact
 * (test/e2e/worker-kill.test.ts).
 */
const FLUSH_KILLS = sized(0, 2);

/**
 * A worker process killed (SIGKILL) while a flush script runs — after BigQuery received the merge, before
 * the activity could complete — FLUSH_KILLS times, each at another flush: the next worker runs the flush
 * again (it merges the same staged batches, changing nothing twice), the run ends exact, and every job still
 * keeps BigQuery's per-table limits.
 */
describe.runIf(FLUSH_KILLS > 0)('the BigQuery worker killed mid-flush', () => {
  let emulator: BigQueryEmulator;
  let proxy: BigQueryQuotaProxy;
  let companion: CompanionHandle;
  let env: Awaited<ReturnType<typeof connectToTestServer>>;
  let deps: Dependencies | undefined;
  let worker: ReturnType<typeof spawnWorker> | undefined;
  let flushes = 0;
  /** Set by the test: called (and cleared) when the next flush script arrives at the proxy. */
  let onFlush: (() => void) | null = null;
  const dataset = `kill_${randomBytes(4).toString('hex')}`;
  const taskQueue = `bq-kill-${Date.now().toString(36)}`;
  const from = new Date(Date.now() - 200 * DAY_MS).toISOString();

  beforeAll(async () => {
    emulator = await startBigQueryEmulator();
    proxy = await startBigQueryQuotaProxy(emulator.endpoint, {
      enforce: true,
      minJobMs: 300,
      // A flush script begins with its mark (connectors/bigquery/flush.ts).
      onQuery: (sql) => {
        if (!sql.startsWith(FLUSH_SCRIPT_MARK)) return;
        flushes += 1;
        onFlush?.();
        onFlush = null;
      },
    });
    companion = await startCompanion({ seed: 29, tickets: 30, rateLimits: false });
    env = await connectToTestServer();
  }, 600_000);
  afterAll(async () => {
    if (worker) await killed(worker.child);
    await deps?.close();
    await companion?.stop();
    await env?.teardown();
    await proxy?.stop();
    await emulator?.stop();
  });

  it(`ends exact after ${FLUSH_KILLS} kill(s) inside flushes, within the limits`, async () => {
    const workerEnv = {
      SUPPORT_API_URL: companion.baseUrl,
      SUPPORT_API_KEY: companion.keys.admin,
      DESTINATION_URL: `bigquery://${emulator.projectId}/${dataset}`,
      BIGQUERY_API_ENDPOINT: proxy.endpoint,
      BIGQUERY_STORAGE_ENDPOINT: emulator.grpcEndpoint,
      TEMPORAL_ADDRESS: testTemporalAddress(),
      TEMPORAL_TASK_QUEUE: taskQueue,
      SUPPORT_API_RATE_LIMITS: 'off',
      LOG_LEVEL: 'info',
    };
    const config = loadConfig({}, undefined, { ...workerEnv, SYNC_START_DATE: from, SYNC_PAGE_SIZE: '10' });
    deps = await buildDependencies(config, silentLogger);
    worker = spawnWorker(workerEnv);
    await worker.ready;
    const input = incrementalRunInput(config);
    const { result } = await startRun(env.client.workflow, taskQueue, input);
    // Killed the moment a flush script arrives at the proxy (the 1st, then the next after each restart):
    // the job runs on the emulator, and the worker is dead before the answer (held ≥ 300 ms) comes back.
    const killedAt: number[] = [];
    for (let kill = 0; kill < FLUSH_KILLS; kill++) {
      const current = worker;
      await new Promise<void>((resolve) => {
        onFlush = () => {
          current.child.kill('SIGKILL');
          killedAt.push(flushes);
          resolve();
        };
      });
      await killed(current.child);
      worker = spawnWorker(workerEnv);
      const respawned = worker;
      respawned.child.once('exit', (code, signal) => {
        if (respawned === worker && signal !== 'SIGKILL')
          console.error(`worker exited (${code ?? signal}):\n${respawned.stderr.join('')}`);
      });
      await worker.ready;
    }
    expect(killedAt).toHaveLength(FLUSH_KILLS);
    expect(await result).toBe('succeeded');
    expect(proxy.report().violations).toEqual([]);
    const bq = new BigQuery({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.endpoint) });
    await expectBigQueryEqualsSource(bq, dataset, await sourceSnapshot(deps.client, from));
    expect(await duplicateIds(bq, dataset)).toEqual(Object.fromEntries(COMPARED_TABLES.map((t) => [t, 0])));
    const [runs] = await bq.query({
      query: `SELECT status FROM \`${dataset}\`._sync_runs WHERE run_id = @id`,
      params: { id: input.runId },
    });
    expect(runs).toEqual([{ status: 'succeeded' }]);
  }, 420_000);
});
