import { randomBytes } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Activities, RunPlan } from '../../activities/index.js';
import { locateTemporalCli } from '../../embedded/temporal-cli.js';
import type { SyncRunInput, SyncSettings } from '../../schemas/run-input.js';
import type { StreamCounts } from '../../schemas/run-summary.js';
import type { ExportPass, StreamName } from '../../schemas/streams.js';
import type { SyncRunRecord } from '../../schemas/warehouse.js';
import { loadConfig, settingsFromConfig } from '../../worker/config.js';
import { runWorkflowId } from '../../worker/run-sync.js';
import { type RunningWorkers, startWorkers } from '../../worker/workers.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { workflowBundle } from './harness.js';

/**
 * The orchestration alone: the real workflows on a real Temporal dev server, every activity replaced by an
 * in-memory stub (no source, no warehouse), so what is tested is how the run's lanes coordinate — threads
 * read while the tickets are listed, the re-read bounded by the other lanes, export marks moved over the
 * complete prefix only, counts carried over continue-as-new. The time-skipping test server is a download
 * (not available offline), so this file starts its own dev server (TEMPORAL_CLI) with a low
 * continue-as-new suggestion, so the page loops continue as new after a few pages.
 */

/** Workflow history events after which the server suggests continuing as new (the default is thousands). */
const SUGGEST_CONTINUE_AS_NEW_AFTER = 60;

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  const cli = await locateTemporalCli();
  env = await TestWorkflowEnvironment.createLocal({
    server: {
      ...(cli.kind === 'existing-path' ? { executable: { type: 'existing-path', path: cli.path } } : {}),
      ip: '127.0.0.1',
      searchAttributes: SEARCH_ATTRIBUTES,
      extraArgs: [
        '--log-level',
        'error',
        '--dynamic-config-value',
        `limit.historyCount.suggestContinueAsNew=${SUGGEST_CONTINUE_AS_NEW_AFTER}`,
      ],
    },
  });
}, 300_000);
afterAll(async () => {
  await env?.teardown();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const DAY_MS = 24 * 60 * 60 * 1000;
const iso = (ms: number) => new Date(ms).toISOString();

/** One event of a workflow's history, as the client fetches it. */
type HistoryEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

/** What the stub source holds and how slowly it answers. */
interface World {
  /** Tickets pages of the listing (none: the run plans no tickets), each queueing `threadsPerPage` threads. */
  ticketPages: number;
  threadsPerPage: number;
  ticketPageMs: number;
  threadPageMs: number;
  /** Threads queued before the run (what an earlier run left). */
  queuedBefore: number;
  /** Threads of unchanged tickets the rolling re-read may queue. */
  stale: number;
  /** Export passes and their windows, as planned. */
  passes: RunPlan['passes'];
  /** The history start is found by the listing: until it has ended, the plan knows no start and no pass. */
  historyFromListing: boolean;
  /** How long a window's page takes, and whether it fails (by the window's start). */
  windowMs: (windowStart: string) => number;
  windowFails: (windowStart: string) => boolean;
  /** Whether a reference stream's pages fail. */
  referenceFails: (stream: string) => boolean;
}

const WORLD: World = {
  ticketPages: 0,
  threadsPerPage: 0,
  ticketPageMs: 0,
  threadPageMs: 10,
  queuedBefore: 0,
  stale: 0,
  passes: [],
  historyFromListing: false,
  windowMs: () => 0,
  windowFails: () => false,
  referenceFails: () => false,
};

/** What the stub activities saw, in order, with when (ms since the run began). */
interface Recording {
  readonly events: { at: number; what: string }[];
  readonly reads: Map<string, number>;
  readonly marks: { stream: string; value: string }[];
  readonly queue: Map<string, 'running' | 'complete' | 'failed'>;
  /** Every `_sync_runs` row recorded, in order. */
  readonly ledger: SyncRunRecord[];
  at(what: string): number | undefined;
  all(what: string): number[];
}

/** The stub activities over `world`, recording into the returned recording. */
function stubActivities(world: World): { activities: Activities; recording: Recording } {
  const t0 = Date.now();
  const events: Recording['events'] = [];
  const log = (what: string) => events.push({ at: Date.now() - t0, what });
  const queue = new Map<string, 'running' | 'complete' | 'failed'>();
  for (let i = 0; i < world.queuedBefore; i++) queue.set(`q${i}`, 'running');
  const reads = new Map<string, number>();
  const marks: Recording['marks'] = [];
  const ledger: SyncRunRecord[] = [];
  let ticketsPage = 0;
  let staleLeft = world.stale;
  let rounds = 0;
  const planRun = async (): Promise<RunPlan> => {
    const known = !world.historyFromListing || events.some((e) => e.what === 'tickets listed');
    return {
      tickets:
        world.ticketPages > 0
          ? {
              head: null,
              headFloor: null,
              sweep: { restart: false, maxPages: null },
              queueAllThreads: false,
            }
          : null,
      passes: known ? world.passes : [],
      historyStart: known ? '2025-01-01T00:00:00.000Z' : null,
    };
  };
  const page = { cursorTag: null, restarted: false, pages: 1, rows: 1, requests: 1, done: true };
  const stubs = {
    beginRun: async (input: { run: SyncRunRecord }) => {
      ledger.push(input.run);
      return { deletionSince: new Date().toISOString(), plan: await planRun() };
    },
    recordRun: async (run: SyncRunRecord) => {
      ledger.push(run);
    },
    planRun,
    beginSweep: async () => ({ startedAt: new Date().toISOString(), resumedAtPage: ticketsPage }),
    // One page per run: each call stands for a run of pages as long as its one page.
    syncTicketsPages: async () => {
      await sleep(world.ticketPageMs);
      const i = ticketsPage++;
      for (let k = 0; k < world.threadsPerPage; k++) queue.set(`t${i}-${k}`, 'running');
      log(`tickets page ${i}`);
      const done = ticketsPage >= world.ticketPages;
      const now = new Date().toISOString();
      return {
        pages: [
          {
            ...page,
            done,
            cursorTag: done ? null : `c${i}`,
            changed: world.threadsPerPage,
            newest: now,
            oldest: now,
          },
        ],
        requests: 1,
      };
    },
    finishSweep: async () => undefined,
    finishTickets: async () => {
      log('tickets listed');
    },
    listQueuedThreadCheckpoints: async (input: { limit: number; skip: string[] }) => {
      const skip = new Set(input.skip);
      return [...queue]
        .filter(([scope, status]) => status === 'running' && !skip.has(scope))
        .slice(0, input.limit)
        .map(([scope]) => ({ scope, tag: scope }));
    },
    syncThreadPage: async (input: { scope: string }) => {
      await sleep(world.threadPageMs);
      reads.set(input.scope, (reads.get(input.scope) ?? 0) + 1);
      queue.set(input.scope, 'complete');
      log(`thread ${input.scope}`);
      return page;
    },
    // A run of threads in one activity, each as long as a page: the lanes' timing is the same.
    syncThreadBatch: async (input: { threads: { scope: string }[] }) => {
      for (const { scope } of input.threads) {
        await sleep(world.threadPageMs);
        reads.set(scope, (reads.get(scope) ?? 0) + 1);
        queue.set(scope, 'complete');
        log(`thread ${scope}`);
      }
      const n = input.threads.length;
      return { pages: n, rows: n * page.rows, rejected: 0, completed: n, handedBack: [], requests: n };
    },
    markThreadFailed: async (input: { scope: string }) => {
      queue.set(input.scope, 'failed');
      return { marked: true };
    },
    queueThreadsToReverify: async (input: { limit: number }) => {
      const queued = Math.min(input.limit, staleLeft);
      for (let k = 0; k < queued; k++) queue.set(`r${world.stale - staleLeft + k}`, 'running');
      staleLeft -= queued;
      log(`re-read round ${rounds++}`);
      return { queued };
    },
    finishThreads: async () => undefined,
    beginWindow: async (input: { run: SyncRunRecord }) => {
      ledger.push(input.run);
      return { resumedAtPage: 0 };
    },
    finishWindow: async (input: { run: SyncRunRecord }) => {
      ledger.push(input.run);
    },
    syncExportPages: async (input: { pass: ExportPass; windowStart: string }) => {
      await sleep(world.windowMs(input.windowStart));
      if (world.windowFails(input.windowStart)) {
        log(`window failed ${input.pass} ${input.windowStart}`);
        throw ApplicationFailure.nonRetryable('injected failure', 'Injected');
      }
      log(`window done ${input.pass} ${input.windowStart}`);
      return { pages: [page], requests: 1 };
    },
    advanceHighWaterMark: async (input: { stream: string; value: string }) => {
      marks.push(input);
    },
    succeededWindows: async () => [],
    syncReferencePages: async (input: { stream: string }) => {
      if (world.referenceFails(input.stream)) {
        throw ApplicationFailure.nonRetryable(`injected failure of ${input.stream}`, 'Injected');
      }
      return { pages: [page], requests: 1 };
    },
    markUnseenDeleted: async () => ({ deleted: 0 }),
    flushStaged: async () => ({}),
    readReportAccess: async () => ({ requests: 0, restricted: null, detail: 'stub' }),
    reconcile: async () => ({ requests: 0, equal: 0, mismatch: 0, skipped: 0, mismatches: [] }),
    schemaDriftAfterRun: async () => ({ requests: 0, recorded: 0, changes: [], customFieldColumns: null }),
    missingData: async () => ({ rejected: {}, failedThreads: 0, summary: null }),
  };
  // The activities no run here reaches (the audit: its budget is 0) fail loudly if one ever does.
  const unreachable = [
    'planAudit',
    'finishAudit',
    'auditTicket',
    'auditThread',
    'auditWindow',
    'syncReportSnapshot',
  ];
  const activities = {
    ...Object.fromEntries(
      unreachable.map((name) => [
        name,
        async () => {
          throw ApplicationFailure.nonRetryable(`${name} is not stubbed`);
        },
      ]),
    ),
    ...stubs,
  } as unknown as Activities;
  const recording: Recording = {
    events,
    reads,
    marks,
    queue,
    ledger,
    at: (what) => events.find((e) => e.what === what)?.at,
    all: (what) => events.filter((e) => e.what.startsWith(what)).map((e) => e.at),
  };
  return { activities, recording };
}

const baseSettings = (): SyncSettings =>
  settingsFromConfig(
    loadConfig({}, undefined, {
      SUPPORT_API_URL: 'https://source.invalid',
      SUPPORT_API_KEY: 'key',
      DESTINATION_URL: 'postgres://u:p@localhost/db',
      SUPPORT_API_RATE_LIMITS: 'off',
      SYNC_AUDIT_SHARE: '0',
      SYNC_THREAD_REVERIFY_PER_RUN: '0',
    }),
  );

interface Run {
  recording: Recording;
  /** The run's result, or its failure. */
  outcome: { result?: Record<string, StreamCounts>; error?: Error };
  /** The parent's history events. */
  history: HistoryEvent[];
}

/** One sync run on the stub world, with workers of its own on a fresh task queue. */
async function syncOn(
  world: Partial<World>,
  streams: StreamName[],
  settings: Partial<SyncSettings> = {},
): Promise<Run> {
  const { activities, recording } = stubActivities({ ...WORLD, ...world });
  const taskQueue = `orchestration-${randomBytes(4).toString('hex')}`;
  const workers: RunningWorkers = await startWorkers({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue,
    activities,
    fleetBudget: null,
    workflowBundle: await workflowBundle(),
    shutdownGraceTime: '1 second',
  });
  try {
    const runId = `orchestration-${randomBytes(4).toString('hex')}`;
    const input: SyncRunInput = {
      runId,
      mode: 'incremental',
      streams,
      settings: { ...baseSettings(), analyticsTaskQueue: `${taskQueue}-analytics`, ...settings },
    };
    const handle = await env.client.workflow.start('syncRunWorkflow', {
      taskQueue,
      workflowId: runWorkflowId(runId),
      args: [input],
    });
    const outcome: Run['outcome'] = {};
    try {
      outcome.result = (await handle.result()) as Record<string, StreamCounts>;
    } catch (err) {
      outcome.error = err as Error;
    }
    const history = (await handle.fetchHistory()).events ?? [];
    return { recording, outcome, history };
  } finally {
    await workers.shutdown();
  }
}

/** The child workflows the parent started, in the order it started them: workflow id and first run id. */
function childrenOf(history: Run['history'], type?: string): { workflowId: string; runId: string }[] {
  return history.flatMap((e) => {
    const attributes = e.childWorkflowExecutionStartedEventAttributes;
    const started = attributes?.workflowExecution;
    if (type !== undefined && attributes?.workflowType?.name !== type) return [];
    return started?.workflowId && started.runId
      ? [{ workflowId: started.workflowId, runId: started.runId }]
      : [];
  });
}

/** The runs of one child workflow, following its continue-as-new chain from the first. */
async function runsOf(child: { workflowId: string; runId: string }): Promise<string[]> {
  const statuses: string[] = [];
  let runId: string | undefined = child.runId;
  while (runId) {
    const handle: WorkflowHandle = env.client.workflow.getHandle(child.workflowId, runId);
    const described = await handle.describe();
    statuses.push(described.status.name);
    if (described.status.name !== 'CONTINUED_AS_NEW') break;
    const closed: HistoryEvent | undefined = (await handle.fetchHistory()).events?.at(-1);
    runId = closed?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return statuses;
}

/** The events of every run of a child's continue-as-new chain, in order. */
async function chainHistory(child: { workflowId: string; runId: string }): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  let runId: string | undefined = child.runId;
  while (runId) {
    const run: HistoryEvent[] =
      (await env.client.workflow.getHandle(child.workflowId, runId).fetchHistory()).events ?? [];
    events.push(...run);
    runId = run.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return events;
}

const windowsFrom = (start: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    windowStart: iso(Date.parse(start) + i * DAY_MS),
    windowEnd: iso(Date.parse(start) + (i + 1) * DAY_MS),
  }));

describe('the run orchestration, with stub activities', () => {
  it('reads threads while the tickets are listed, each once; the threads child starts first and settles after the listing; the exports wait for it', async () => {
    const { recording, outcome, history } = await syncOn(
      {
        ticketPages: 10,
        threadsPerPage: 3,
        ticketPageMs: 500,
        historyFromListing: true,
        passes: [
          {
            pass: 'agent_sessions',
            windows: windowsFrom('2026-01-01T00:00:00.000Z', 1),
            advanceHighWaterMark: true,
          },
        ],
      },
      ['tickets', 'ticket_messages', 'agent_sessions'],
      { threadConcurrency: 4 },
    );
    expect(outcome.error).toBeUndefined();
    // Every thread the listing queued was read exactly once, and the queue is empty.
    expect(recording.reads.size).toBe(30);
    expect([...recording.reads.values()].every((n) => n === 1)).toBe(true);
    expect([...recording.queue.values()].every((s) => s === 'complete')).toBe(true);
    // Threads were read while the listing went on. (Whether the last read comes after the listing's mark is a
    // race: the last page's threads can all be read before its activity returns and the mark is recorded;
    // the lane settling after the listing is the children's close order below.)
    const listed = recording.at('tickets listed')!;
    const threads = recording.all('thread ');
    expect(Math.min(...threads)).toBeLessThan(listed);
    // The threads child is started before the tickets child, and closes after it.
    const children = childrenOf(history);
    expect(children.map((c) => c.workflowId.split('/')[0]).slice(0, 2)).toEqual([
      'ticket_messages',
      'tickets',
    ]);
    const closeOf = async (c: { workflowId: string }) =>
      (await env.client.workflow.getHandle(c.workflowId).describe()).closeTime!.getTime();
    expect(await closeOf(children[0]!)).toBeGreaterThanOrEqual(await closeOf(children[1]!));
    expect(outcome.result?.['ticket_messages']).toMatchObject({ pages: 30, rows: 30 });
    expect(outcome.result?.['tickets']).toMatchObject({ pages: 10 });
    // The export pass waited for the listing (it finds where the history starts), then was planned and read.
    expect(recording.all('window done')).toHaveLength(1);
    expect(recording.all('window done')[0]).toBeGreaterThan(listed);
    expect(outcome.result?.['agent_sessions']).toMatchObject({ windows: 1 });
  });

  it('continues a long tickets listing and a long thread queue as new, carrying counts, losing and repeating nothing', async () => {
    const { recording, outcome, history } = await syncOn(
      // The threads child continues as new while the listing goes on: it must go on waiting for it.
      { ticketPages: 20, threadsPerPage: 2, ticketPageMs: 500, queuedBefore: 30 },
      ['tickets', 'ticket_messages'],
      { threadConcurrency: 2 },
    );
    expect(outcome.error).toBeUndefined();
    const children = childrenOf(history);
    for (const child of children) {
      const runs = await runsOf(child);
      expect(runs.length, child.workflowId).toBeGreaterThan(1);
      expect(runs.at(-1)).toBe('COMPLETED');
    }
    expect(recording.reads.size).toBe(70);
    expect([...recording.reads.values()].every((n) => n === 1)).toBe(true);
    // The counts of every run of the chain, carried to the last.
    expect(outcome.result?.['ticket_messages']).toMatchObject({ pages: 70, rows: 70 });
    expect(outcome.result?.['tickets']).toMatchObject({ pages: 20 });
  });

  it('re-reads unchanged threads only while another lane is busy, and one round when none is', async () => {
    const exportsBusy = await syncOn(
      {
        stale: 400,
        passes: [
          {
            pass: 'agent_sessions',
            windows: windowsFrom('2026-02-01T00:00:00.000Z', 1),
            advanceHighWaterMark: true,
          },
        ],
        windowMs: () => 3000,
      },
      ['ticket_messages', 'agent_sessions'],
      { threadReverifyPerRun: 400 },
    );
    expect(exportsBusy.outcome.error).toBeUndefined();
    const rounds = exportsBusy.recording.all('re-read round');
    const exportDone = exportsBusy.recording.all('window done')[0]!;
    expect(rounds.filter((at) => at < exportDone).length).toBeGreaterThanOrEqual(2);
    // Once the child has been told the run is idle, at most one more round: the one a workflow task already
    // under way when the signal arrived schedules. Read off the child's history, not the clock, because
    // the signal reaches the child a loaded machine's workflow tasks later than the window's end.
    const [threads] = childrenOf(exportsBusy.history, 'threadsWorkflow');
    const events = await chainHistory(threads!);
    const idleAt = events.findIndex(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'runIdle',
    );
    expect(idleAt).toBeGreaterThan(0);
    const roundsAfterIdle = events
      .slice(idleAt)
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'queueThreadsToReverify');
    expect(roundsAfterIdle.length).toBeLessThanOrEqual(1);

    const alone = await syncOn({ stale: 400 }, ['ticket_messages'], { threadReverifyPerRun: 400 });
    expect(alone.outcome.error).toBeUndefined();
    expect(alone.recording.all('re-read round')).toHaveLength(1);
    expect(alone.recording.reads.size).toBe(4); // one round: REVERIFY_ROUND threads
  });

  it('reads the reference streams in the run itself: no child, each recorded in the ledger under its window id, a failing one failing only itself', async () => {
    const { recording, outcome, history } = await syncOn({ referenceFails: (s) => s === 'tags' }, [
      'views',
      'tags',
      'teams',
    ]);
    expect(childrenOf(history)).toEqual([]);
    const failure = (outcome.error as { cause?: Error } | undefined)?.cause?.message ?? '';
    expect(failure).toMatch(/tags\/[^/]+\/[^/]+: injected failure of tags/);
    expect(failure).not.toMatch(/views|teams/);
    const windows = recording.ledger.filter((r) => r.parent_run_id !== null);
    const statusesOf = (stream: string) =>
      windows.filter((r) => r.stream === stream).map((r) => [r.workflow_id.split('/')[0], r.status]);
    expect(statusesOf('views')).toEqual([
      ['views', 'running'],
      ['views', 'succeeded'],
    ]);
    expect(statusesOf('teams')).toEqual([
      ['teams', 'running'],
      ['teams', 'succeeded'],
    ]);
    expect(statusesOf('tags')).toEqual([
      ['tags', 'running'],
      ['tags', 'failed'],
    ]);
    // One attempt is one row: its running and closing records share the key.
    expect(new Set(windows.map((r) => r.run_id)).size).toBe(3);
    expect(windows.find((r) => r.status === 'failed')?.error).toMatch(/^tags\/.*: injected failure of tags$/);
  });

  it('moves an export mark, and the mark of the pass it covers, over the complete prefix of windows only', async () => {
    const windows = windowsFrom('2026-03-01T00:00:00.000Z', 5);
    const { recording, outcome } = await syncOn(
      {
        passes: [
          { pass: 'csat_surveys.sent', windows, advanceHighWaterMark: true },
          {
            pass: 'csat_surveys.submitted',
            windows: [],
            advanceHighWaterMark: true,
            coveredBy: 'csat_surveys.sent',
          },
        ],
        // Window 1 is slow (window 2 completes first), window 3 fails, window 4 completes after it.
        windowMs: (start) =>
          start === windows[1]!.windowStart ? 1500 : start === windows[4]!.windowStart ? 2500 : 50,
        windowFails: (start) => start === windows[3]!.windowStart,
      },
      ['csat_surveys'],
    );
    // The run fails naming the failed window, after every other window has run.
    const failure = (outcome.error as { cause?: Error } | undefined)?.cause?.message ?? '';
    expect(failure).toContain(`csat_surveys.sent/${windows[3]!.windowStart}/${windows[3]!.windowEnd}`);
    expect(recording.all('window done')).toHaveLength(4);
    const marksOf = (stream: string) =>
      recording.marks.filter((m) => m.stream === stream).map((m) => m.value);
    expect(marksOf('csat_surveys.sent')).toEqual([windows[0]!.windowEnd, windows[2]!.windowEnd]);
    expect(marksOf('csat_surveys.submitted').at(-1)).toBe(windows[2]!.windowEnd);
  });
});
