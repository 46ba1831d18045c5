import {
  ApplicationFailure,
  type ChildWorkflowHandle,
  executeChild,
  log,
  ParentClosePolicy,
  patched,
  setHandler,
  startChild,
  WorkflowIdReusePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { RunPlan } from '../activities/index.js';
import {
  EXPORT_PASSES,
  type ExportPass,
  type ReferenceStream,
  RUN_PRIORITY,
  type RunProgress,
  type StreamCounts,
  type StreamName,
  type StreamProgress,
  type SyncRunInput,
  windowWorkflowId,
} from '../schemas/sync.js';
import { bookkeeping, reconcileActivities } from './activity-proxies.js';
import { allSettledWithLimit } from './concurrency.js';
import { exportWindowWorkflow } from './export-window.js';
import { runProgressQuery } from './progress.js';
import { referenceStreamWorkflow } from './reference-stream.js';
import { reportSnapshotsWorkflow } from './report-snapshots.js';
import {
  SyncRunIdKey,
  SyncStreamKey,
  TemporalScheduledStartTimeKey,
  WindowEndKey,
  WindowStartKey,
} from './search-attributes.js';
import { runIdleSignal, threadsWorkflow, ticketsListedSignal } from './threads.js';
import { ticketsWorkflow } from './tickets.js';

/** Days of new_tickets the reconciliation compares (one report request). */
const RECONCILE_DAYS = 14;

const REFERENCE_STREAMS: readonly ReferenceStream[] = ['views', 'tags', 'teams', 'agents', 'metric_catalog'];

/**
 * One sync run: plans what to read (from the destination's high-water marks), then runs every stream as
 * child workflows with bounded parallelism — reference snapshots, tickets then their threads, and the
 * export passes window by window (oldest first, so the high-water mark only moves over complete windows).
 * Records the run and every window in `_sync_runs`. A failing stream does not stop the others; the run
 * fails at the end naming each failed stream/window and the API's error code.
 */
export async function syncRunWorkflow(input: SyncRunInput): Promise<Record<string, StreamCounts>> {
  const { mode, settings } = input;
  const patienceMs = settings.sourcePatienceMs;
  const runId = input.runId || workflowInfo().workflowId;
  const startedAt = new Date().toISOString(); // workflow time: deterministic
  // A scheduled run (including a schedule backfill) reads up to its scheduled time, not the time it ran.
  const scheduled = workflowInfo().typedSearchAttributes.get(TemporalScheduledStartTimeKey);
  const before = input.range?.before ?? scheduled?.toISOString() ?? startedAt;
  const progress: RunProgress = { runId, mode, status: 'running', streams: {} };
  const track = (name: string): StreamProgress => {
    const entry: StreamProgress = {
      status: 'pending',
      windowsTotal: 0,
      windowsDone: 0,
      pages: 0,
      rows: 0,
      current: null,
      error: null,
    };
    progress.streams[name] = entry;
    return entry;
  };
  setHandler(runProgressQuery, () => progress);

  const run = {
    run_id: runId,
    parent_run_id: null,
    workflow_id: workflowInfo().workflowId,
    stream: null,
    window_start: input.range?.from ?? null,
    window_end: before,
    mode,
    started_at: startedAt,
  };
  await bookkeeping.prepareDestination();
  await bookkeeping.recordRun({
    ...run,
    status: 'running',
    finished_at: null,
    pages: 0,
    rows_written: 0,
    requests: 0,
    error: null,
  });

  // Rows a complete re-read did not receive after this instant are gone from the source (see the activity).
  const deletionSince = await bookkeeping.deletionCutoff();
  const fullRefresh = mode === 'full_refresh';

  const planInput = {
    mode,
    streams: input.streams,
    settings,
    now: before,
    ...(input.range ? { range: input.range } : {}),
  };
  const plan = await bookkeeping.planRun(planInput);
  if (input.streams.includes('ticket_messages')) await bookkeeping.requeueUnsettledThreads();

  const childOptions = (workflowId: string, stream: StreamName, windowStart: string, windowEnd: string) => ({
    workflowId,
    taskQueue: workflowInfo().taskQueue,
    workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE,
    parentClosePolicy: ParentClosePolicy.TERMINATE,
    // Set on every window (not only inherited from the run): a run started by a schedule has the default.
    priority: { priorityKey: RUN_PRIORITY[mode] },
    typedSearchAttributes: [
      { key: SyncStreamKey, value: stream },
      { key: WindowStartKey, value: new Date(windowStart) },
      { key: WindowEndKey, value: new Date(windowEnd) },
      { key: SyncRunIdKey, value: runId },
    ],
  });

  /**
   * Runs one window (a child workflow), keeping the stream's progress. The window records its own attempts
   * in `_sync_runs` (workflows/window-ledger.ts), so one re-run from the UI or `replay` keeps them true.
   */
  async function child(
    entry: StreamProgress,
    stream: StreamName,
    workflowId: string,
    windowStart: string,
    windowEnd: string,
    start: (options: ReturnType<typeof childOptions>) => Promise<StreamCounts>,
  ): Promise<StreamCounts> {
    entry.current = workflowId;
    try {
      const counts = await start(childOptions(workflowId, stream, windowStart, windowEnd));
      entry.windowsDone += 1;
      entry.pages += counts.pages;
      entry.rows += counts.rows;
      entry.requests = (entry.requests ?? 0) + (counts.requests ?? counts.pages);
      return counts;
    } catch (err) {
      throw ApplicationFailure.nonRetryable(describeFailure(workflowId, err), 'StreamFailed');
    } finally {
      entry.current = null;
    }
  }

  async function runStream(entry: StreamProgress, body: () => Promise<void>): Promise<void> {
    entry.status = 'running';
    try {
      await body();
      entry.status = 'succeeded';
    } catch (err) {
      entry.status = 'failed';
      entry.error = err instanceof Error ? err.message : String(err);
      throw err;
    }
  }

  /** Signalled when every stream but tickets and threads has settled: the rolling re-read may stop. */
  let othersSettled = false;
  let threadsHandle: ChildWorkflowHandle<typeof threadsWorkflow> | undefined;

  /**
   * The thread queue drained by one child, started while the tickets are still being listed (it waits for
   * `ticketsListed`), then the rolling re-read; on a full refresh it also marks messages gone from the source.
   */
  async function syncThreads(
    entry: StreamProgress,
    from: string,
    options: { awaitTickets: boolean; fullRefreshSince: string | null; onStarted?: () => void },
  ): Promise<void> {
    await child(
      entry,
      'ticket_messages',
      windowWorkflowId('ticket_messages', from, before),
      from,
      before,
      async (childOpts) => {
        const handle = await startChild(threadsWorkflow, {
          ...childOpts,
          args: [
            {
              runId,
              batchSize: settings.threadBatchSize,
              concurrency: settings.threadConcurrency,
              fullRefreshSince: options.fullRefreshSince,
              awaitTickets: options.awaitTickets,
              runIdle: othersSettled,
              mode,
              patienceMs,
              // The rolling re-read belongs to the runs that keep the warehouse current, not to backfills.
              reverify:
                settings.threadReverifyPerRun > 0 && (mode === 'incremental' || mode === 'full_refresh')
                  ? { min: settings.threadReverifyPerRun, runStartedAt: deletionSince }
                  : null,
              reverified: 0,
            },
          ],
        });
        threadsHandle = handle;
        if (othersSettled) await handle.signal(runIdleSignal);
        options.onStarted?.();
        return handle.result();
      },
    );
  }

  const tasks: (() => Promise<void>)[] = [];
  const ticketsTasks = new Set<() => Promise<void>>();
  const pushTicketsTask = (task: () => Promise<void>) => {
    ticketsTasks.add(task);
    tasks.push(task);
  };
  for (const stream of REFERENCE_STREAMS.filter((s) => input.streams.includes(s))) {
    const entry = track(stream);
    entry.windowsTotal = 1;
    tasks.push(() =>
      runStream(entry, async () => {
        await child(entry, stream, `${stream}/${startedAt}/${before}`, startedAt, before, (options) =>
          executeChild(referenceStreamWorkflow, {
            ...options,
            args: [{ runId, mode, stream, pageSize: settings.pageSize, deletionSince, patienceMs }],
          }),
        );
      }),
    );
  }

  // The tickets listing, as a promise the export passes can wait on when the history start is not known yet.
  let ticketsListed: Promise<boolean> = Promise.resolve(false);
  if (plan.tickets) {
    const tickets = plan.tickets;
    const ticketsEntry = track('tickets');
    const threadsEntry = input.streams.includes('ticket_messages') ? track('ticket_messages') : null;
    ticketsEntry.windowsTotal = 1;
    if (threadsEntry) threadsEntry.windowsTotal = 1;
    const from = tickets.head?.since ?? tickets.headFloor ?? plan.historyStart ?? '1970-01-01T00:00:00.000Z';
    let listed!: (sweepComplete: boolean) => void;
    ticketsListed = new Promise<boolean>((resolve) => {
      listed = resolve;
    });
    pushTicketsTask(() =>
      runStream(ticketsEntry, async () => {
        // Threads start with the tickets: each tickets page queues its changed threads as it commits.
        let threadsStarted!: () => void;
        const started = new Promise<void>((resolve) => {
          threadsStarted = resolve;
        });
        const threads = threadsEntry
          ? runStream(threadsEntry, () =>
              syncThreads(threadsEntry, from, {
                awaitTickets: true,
                fullRefreshSince: fullRefresh ? deletionSince : null,
                onStarted: threadsStarted,
              }),
            )
          : null;
        if (threads) await Promise.race([started, threads.catch(() => undefined)]);
        let sweepComplete = false;
        try {
          await child(
            ticketsEntry,
            'tickets',
            windowWorkflowId('tickets', from, before),
            from,
            before,
            async (options) => {
              const result = await executeChild(ticketsWorkflow, {
                ...options,
                args: [
                  {
                    runId,
                    mode,
                    before,
                    pageSize: settings.pageSize,
                    threadLookbackMs: settings.threadLookbackMs,
                    head: tickets.head,
                    sweep: tickets.sweep,
                    headFloor: tickets.headFloor,
                    queueAllThreads: tickets.queueAllThreads,
                    patienceMs,
                  },
                ],
              });
              sweepComplete = result.sweepComplete;
              return result;
            },
          );
        } finally {
          listed(sweepComplete);
          // Whatever happened to the listing, the threads it queued are read.
          await threadsHandle?.signal(ticketsListedSignal).catch(() => undefined);
        }
        await threads;
      }),
    );
  } else if (input.streams.includes('ticket_messages')) {
    // Threads alone: drain whatever the last tickets run queued, then the rolling re-read.
    const entry = track('ticket_messages');
    entry.windowsTotal = 1;
    pushTicketsTask(() =>
      runStream(entry, () => syncThreads(entry, startedAt, { awaitTickets: false, fullRefreshSince: null })),
    );
  }

  // The exports' history start is found by the first complete ticket sweep: plan them after it.
  const passPlans: (RunPlan['passes'][number] & { awaitHistory?: true })[] = [...plan.passes];
  const awaitingHistory =
    plan.historyStart === null && !input.range
      ? (['csat_surveys', 'agent_sessions'] as const).flatMap((s) =>
          input.streams.includes(s) ? EXPORT_PASSES[s] : [],
        )
      : [];
  for (const pass of awaitingHistory) {
    passPlans.push({ pass, windows: [], advanceHighWaterMark: true, awaitHistory: true });
  }

  for (const initial of passPlans) {
    const entry = track(initial.pass);
    entry.windowsTotal = initial.windows.length;
    tasks.push(() =>
      runStream(entry, async () => {
        let passPlan = initial;
        if (initial.awaitHistory) {
          entry.current = 'waiting for the first ticket sweep (it finds where the history starts)';
          const sweepComplete = await ticketsListed;
          entry.current = null;
          // A sweep that failed leaves the start unknown: the exports then plan from a provisional start
          // (streams do not take each other down). patched: older histories replan without the fallback.
          const fallback = !sweepComplete && patched('history-fallback');
          const replanned = (
            await bookkeeping.planRun(fallback ? { ...planInput, historyFallback: true } : planInput)
          ).passes.find((p) => p.pass === initial.pass);
          if ((!sweepComplete && !fallback) || !replanned) {
            throw ApplicationFailure.nonRetryable(
              `${initial.pass}: the history start is unknown — set SYNC_START_DATE, or sync tickets (its first complete sweep finds the oldest ticket)`,
              'HistoryStartUnknown',
            );
          }
          passPlan = replanned;
          entry.windowsTotal = passPlan.windows.length;
        }
        // Oldest first and one at a time: the analytics budget is small, and the high-water mark must only
        // move over windows that are complete.
        // A window that fails does not stop the later ones (on-call replays just that one and the coverage
        // has no gap); the high-water mark only moves over the contiguous run of complete windows before it.
        const failures: unknown[] = [];
        // A backfill skips the windows an earlier one completed (the same command run again continues).
        const skip = new Set(
          mode === 'backfill' && !input.force
            ? await bookkeeping.succeededWindows({
                workflowIds: passPlan.windows.map((w) =>
                  windowWorkflowId(passPlan.pass, w.windowStart, w.windowEnd),
                ),
              })
            : [],
        );
        for (const window of passPlan.windows) {
          if (skip.has(windowWorkflowId(passPlan.pass, window.windowStart, window.windowEnd))) {
            entry.windowsDone += 1;
            continue;
          }
          try {
            await child(
              entry,
              streamOfPassName(passPlan.pass),
              windowWorkflowId(passPlan.pass, window.windowStart, window.windowEnd),
              window.windowStart,
              window.windowEnd,
              (options) =>
                executeChild(exportWindowWorkflow, {
                  ...options,
                  args: [
                    {
                      runId,
                      pass: passPlan.pass,
                      windowStart: window.windowStart,
                      windowEnd: window.windowEnd,
                      pageSize: settings.pageSize,
                      analyticsTaskQueue: settings.analyticsTaskQueue,
                      includeComments: settings.csatIncludeComments,
                      advanceHighWaterMark: passPlan.advanceHighWaterMark && failures.length === 0,
                      mode,
                      patienceMs,
                    },
                  ],
                }),
            );
          } catch (err) {
            failures.push(err);
          }
        }
        if (failures.length === 1) throw failures[0];
        if (failures.length > 1)
          throw ApplicationFailure.nonRetryable(failures.map(messageOf).join('; '), 'StreamFailed');
        // A full refresh re-read every survey sent since the start date: those it did not receive (their
        // ticket was deleted, spec 2.7 rule 7) are gone. Only that range: older rows were not re-read.
        if (fullRefresh && passPlan.pass === 'csat_surveys.sent' && passPlan.windows.length > 0) {
          await bookkeeping.markUnseenDeleted({
            table: 'csat_surveys',
            since: deletionSince,
            within: { column: 'sent_at', from: passPlan.windows[0]!.windowStart },
          });
        }
      }),
    );
  }

  const reportQueries = settings.reportQueries ?? [];
  if (input.streams.includes('report_snapshots') && reportQueries.length > 0) {
    // Saved report queries (REPORT_QUERIES), each taken once per run at the run's upper bound.
    const entry = track('report_snapshots');
    entry.windowsTotal = 1;
    tasks.push(() =>
      runStream(entry, async () => {
        await child(
          entry,
          'report_snapshots',
          windowWorkflowId('report_snapshots', startedAt, before),
          startedAt,
          before,
          (options) =>
            executeChild(reportSnapshotsWorkflow, {
              ...options,
              args: [
                {
                  runId,
                  takenAt: before,
                  queries: reportQueries,
                  analyticsTaskQueue: settings.analyticsTaskQueue,
                  mode,
                  patienceMs,
                },
              ],
            }),
        );
      }),
    );
  }

  // When every stream but tickets/threads has settled, the rolling thread re-read may stop at its minimum.
  let othersPending = tasks.filter((t) => !ticketsTasks.has(t)).length;
  const othersDone = async () => {
    othersSettled = true;
    await threadsHandle?.signal(runIdleSignal).catch(() => undefined);
  };
  if (othersPending === 0) await othersDone();
  const lanes = tasks.map((task) =>
    ticketsTasks.has(task)
      ? task
      : async () => {
          try {
            await task();
          } finally {
            othersPending -= 1;
            if (othersPending === 0) await othersDone();
          }
        },
  );
  const results = await allSettledWithLimit(lanes, settings.streamParallelism);
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [messageOf(r.reason)] : []));
  const counts: Record<string, StreamCounts> = {};
  for (const [name, entry] of Object.entries(progress.streams)) {
    counts[name] = {
      pages: entry.pages,
      rows: entry.rows,
      windows: entry.windowsDone,
      ...(entry.requests !== undefined ? { requests: entry.requests } : {}),
    };
  }
  const totals = Object.values(counts).reduce(
    (a, c) => ({ pages: a.pages + c.pages, rows: a.rows + c.rows }),
    {
      pages: 0,
      rows: 0,
    },
  );
  let reconcileRequests = 0;
  // Reconciliation (activities/reconcile.ts): the source's own numbers against the warehouse, after every
  // stream, when this run synced tickets. Mismatches and a failing check are warnings, never a failed run.
  // patched: histories of runs that ended before this step existed replay without it.
  if (progress.streams['tickets']?.status === 'succeeded' && patched('reconcile-after-run')) {
    try {
      const { requests, ...reconciliation } = await reconcileActivities(
        settings.analyticsTaskQueue,
      ).reconcile({
        runId,
        before,
        days: RECONCILE_DAYS,
        views: progress.streams['views']?.status === 'succeeded',
      });
      progress.reconciliation = reconciliation;
      reconcileRequests = requests;
    } catch (err) {
      log.warn('reconciliation failed (the run is not affected)', { error: messageOf(err) });
      progress.reconciliation = { equal: 0, mismatch: 0, skipped: 0, mismatches: [], error: messageOf(err) };
    }
  }

  // A run that lost data never says "succeeded": items set aside and failed threads make it incomplete.
  // patched: histories of runs that ended before this step existed replay without it.
  if (patched('missing-data-report')) {
    progress.missing = await bookkeeping.missingData();
  }
  const missing = progress.missing?.summary ?? null;
  progress.status = failures.length ? 'failed' : missing ? 'incomplete' : 'succeeded';
  await bookkeeping.recordRun({
    ...run,
    status: progress.status,
    finished_at: new Date().toISOString(),
    pages: totals.pages,
    rows_written: totals.rows,
    requests: Object.values(progress.streams).reduce((n, e) => n + (e.requests ?? 0), reconcileRequests),
    error: failures.length || missing ? [...failures, ...(missing ? [missing] : [])].join('; ') : null,
  });
  if (failures.length) {
    throw ApplicationFailure.nonRetryable(
      `sync run ${runId} failed: ${failures.join('; ')}`,
      'SyncRunFailed',
    );
  }
  return counts;
}

function streamOfPassName(pass: ExportPass): StreamName {
  return EXPORT_PASSES.agent_sessions.includes(pass) ? 'agent_sessions' : 'csat_surveys';
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** "<workflow id>: <API code> <message> (request_id …)" from the innermost cause of a child failure. */
function describeFailure(workflowId: string, err: unknown): string {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause) cause = cause.cause;
  return `${workflowId}: ${messageOf(cause)}`;
}
