import { ApplicationFailure, executeChild } from '@temporalio/workflow';
import type { RunPlan } from '../../activities/index.js';
import type { StreamProgress } from '../../schemas/run-summary.js';
import {
  EXPORT_PASSES,
  EXPORT_STREAMS,
  FULL_REFRESH_MARKS_UNSEEN,
  streamOfPass,
} from '../../schemas/streams.js';
import { windowWorkflowId } from '../../schemas/workflow-names.js';
import { bookkeeping } from '../activity-proxies.js';
import { allSettledWithLimit } from '../concurrency.js';
import { exportWindowWorkflow } from '../export-window.js';
import { messageOf } from '../failures.js';
import { child, type Lane, type RunContext, runStream, track } from './context.js';
import { CompletePrefix, RunMarks } from './export-marks.js';

type PassPlan = RunPlan['passes'][number] & { awaitHistory?: true };
type PassWindow = PassPlan['windows'][number];
type PlanInput = Parameters<typeof bookkeeping.planRun>[0];

/**
 * Windows of one pass read at once. Each is a chain of dependent pages; a few chains keep the analytics
 * class's queue non-empty while one waits for its workflow task, without scheduling every window of a
 * long backfill at once (the queue's rate, not this, paces the requests).
 */
export const EXPORT_WINDOWS_AT_ONCE = 3;

/**
 * The export passes (CSAT by sent and by submitted date, agent sessions), one lane each, a few windows at
 * once (EXPORT_WINDOWS_AT_ONCE, oldest first).
 * When the history's start is not known yet, a pass waits for the first complete ticket sweep
 * (`ticketsListed`), which finds it, and is planned then.
 */
export function exportLanes(ctx: RunContext, ticketsListed: PromiseLike<boolean>): Lane[] {
  const marks = new RunMarks();
  return passPlansOf(ctx).map((initial) => {
    const lane = new ExportPassLane(ctx, initial, marks);
    return () => runStream(lane.entry, () => lane.run(ticketsListed));
  });
}

/** The passes as the run planned them, and those to plan once the first ticket sweep found the history. */
function passPlansOf(ctx: RunContext): PassPlan[] {
  const { input, plan } = ctx;
  const awaitingHistory =
    plan.historyStart === null && !input.range
      ? EXPORT_STREAMS.flatMap((s) => (input.streams.includes(s) ? EXPORT_PASSES[s] : []))
      : [];
  return [
    ...plan.passes,
    ...awaitingHistory.map((pass) => ({
      pass,
      windows: [],
      advanceHighWaterMark: true,
      awaitHistory: true as const,
    })),
  ];
}

/**
 * What a pass waits for the ticket listing to learn before it reads, and is re-planned then (once):
 *  - `history`: where the history starts (the first complete sweep finds the oldest ticket);
 *  - `cover`: whether another pass covers its first read (known once this run's sweep has found the oldest
 *    ticket). A pass planned for its history is never also pending a cover: after a complete sweep the
 *    oldest ticket is known, and a provisional plan moves no mark (so no pass covers it).
 */
type Wait = 'history' | 'cover';

const WAITING: Record<Wait, string> = {
  history: 'waiting for the first ticket sweep (it finds where the history starts)',
  cover: 'waiting for the ticket sweep (it tells whether another pass covers this one)',
};

const waitOf = (plan: PassPlan): Wait | null =>
  plan.awaitHistory ? 'history' : plan.coverPending ? 'cover' : null;

/** What the re-plan asks the planner once the listing has ended; null: nothing, the plan stands. */
function replanInput(ctx: RunContext, wait: Wait, sweepComplete: boolean): PlanInput | null {
  // A sweep that failed leaves the start unknown: the exports then plan from a provisional start (streams
  // do not take each other down).
  if (wait === 'history') return sweepComplete ? ctx.planInput : { ...ctx.planInput, historyFallback: true };
  return sweepComplete ? { ...ctx.planInput, coverPendingSinceStart: true } : null;
}

/** The pass as re-planned (`answer`: the planner's, when it was asked). */
function replanned(initial: PassPlan, wait: Wait, answer: RunPlan | null): PassPlan {
  const found = answer?.passes.find((p) => p.pass === initial.pass);
  if (wait === 'cover') return found?.coveredBy ? found : initial;
  if (!found) {
    throw ApplicationFailure.nonRetryable(
      `${initial.pass}: the history start is unknown — set SYNC_START_DATE, or sync tickets (its first complete sweep finds the oldest ticket)`,
      'HistoryStartUnknown',
    );
  }
  return found;
}

/** One export pass: re-planned when it must wait for the listing, then its windows, its marks moved. */
class ExportPassLane {
  readonly entry: StreamProgress;
  readonly #ctx: RunContext;
  readonly #initial: PassPlan;
  readonly #marks: RunMarks;

  constructor(ctx: RunContext, initial: PassPlan, marks: RunMarks) {
    this.#ctx = ctx;
    this.#initial = initial;
    this.#marks = marks;
    this.entry = track(ctx, initial.pass);
    this.entry.windowsTotal = initial.windows.length;
  }

  // Awaits only where the pass waits: a pass planned from the start starts its first window at once (the
  // order of the run's commands is what recorded histories hold).
  async run(ticketsListed: PromiseLike<boolean>): Promise<void> {
    const { input, mode, deletionSince } = this.#ctx;
    const { entry } = this;
    let passPlan = this.#initial;
    const wait = waitOf(passPlan);
    if (wait) {
      entry.current = WAITING[wait];
      const sweepComplete = await ticketsListed;
      entry.current = null;
      const ask = replanInput(this.#ctx, wait, sweepComplete);
      passPlan = replanned(passPlan, wait, ask ? await bookkeeping.planRun(ask) : null);
      entry.windowsTotal = passPlan.windows.length;
    }
    // Covered, a pass reads only the windows queued for a re-read and its mark moves with the covering pass's.
    if (passPlan.coveredBy) {
      const cover = this.#marks.of(passPlan.coveredBy);
      cover.cover(passPlan.pass);
      await cover.moved;
    }
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
    const own = this.#marks.of(passPlan.pass);
    const failures: unknown[] = [];
    for (const result of await allSettledWithLimit(
      this.#windowTasks(passPlan, skip),
      EXPORT_WINDOWS_AT_ONCE,
    )) {
      if (result.status === 'rejected') failures.push(result.reason);
    }
    await own.moved;
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1)
      throw ApplicationFailure.nonRetryable(failures.map(messageOf).join('; '), 'StreamFailed');
    // A full refresh re-read the pass since the start date: the rows of that range it did not receive
    // are gone (the pass's `fullRefreshMarksUnseen`). Only that range: older rows were not re-read.
    const marksUnseen = FULL_REFRESH_MARKS_UNSEEN[passPlan.pass];
    if (mode === 'full_refresh' && marksUnseen && passPlan.windows.length > 0) {
      await bookkeeping.markUnseenDeleted({
        table: marksUnseen.table,
        since: deletionSince,
        within: { column: marksUnseen.column, from: passPlan.windows[0]!.windowStart },
      });
    }
  }

  /**
   * One task per window not skipped. Several windows at once: a window is a chain of dependent pages, each
   * waiting for a workflow task and a dispatch, so one window at a time would leave the class idle between
   * pages (the analytics budget still paces every page of the fleet). A window that fails does not stop the
   * others (on-call replays just that one and the coverage has no gap); the pass's mark moves, one move at
   * a time, over the contiguous prefix of complete windows.
   */
  #windowTasks(passPlan: PassPlan, skip: ReadonlySet<string>): (() => Promise<void>)[] {
    const { pass, windows } = passPlan;
    const done = windows.map((w) => skip.has(windowWorkflowId(pass, w.windowStart, w.windowEnd)));
    this.entry.windowsDone += done.filter(Boolean).length;
    const movesOwnMark = passPlan.advanceHighWaterMark && !passPlan.coveredBy;
    const prefix = new CompletePrefix(
      windows.map((w) => w.windowEnd),
      done,
    );
    const own = this.#marks.of(pass);
    return windows.flatMap((window, i) =>
      done[i]
        ? []
        : [
            async () => {
              await this.#runWindow(pass, window);
              const reached = prefix.complete(i);
              if (movesOwnMark && reached !== null) own.reach(pass, reached);
            },
          ],
    );
  }

  #runWindow(pass: PassPlan['pass'], window: PassWindow) {
    const { runId, mode, settings, patienceMs } = this.#ctx;
    return child(this.#ctx, this.entry, { stream: streamOfPass(pass), name: pass, ...window }, (options) =>
      executeChild(exportWindowWorkflow, {
        ...options,
        args: [
          {
            runId,
            pass,
            windowStart: window.windowStart,
            windowEnd: window.windowEnd,
            pageSize: settings.pageSize,
            analyticsTaskQueue: settings.analyticsTaskQueue,
            includeComments: settings.csatIncludeComments,
            mode,
            patienceMs,
          },
        ],
      }),
    );
  }
}
