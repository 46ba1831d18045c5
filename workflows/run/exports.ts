import { ApplicationFailure, executeChild } from '@temporalio/workflow';
import type { RunPlan } from '../../activities/index.js';
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

type PassPlan = RunPlan['passes'][number] & { awaitHistory?: true };

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
  const { input, plan, runId, mode, settings, patienceMs, deletionSince } = ctx;
  // The exports' history start is found by the first complete ticket sweep: plan them after it.
  const passPlans: PassPlan[] = [...plan.passes];
  const awaitingHistory =
    plan.historyStart === null && !input.range
      ? EXPORT_STREAMS.flatMap((s) => (input.streams.includes(s) ? EXPORT_PASSES[s] : []))
      : [];
  for (const pass of awaitingHistory) {
    passPlans.push({ pass, windows: [], advanceHighWaterMark: true, awaitHistory: true });
  }
  // Per pass: how far its complete windows reach, and the passes whose marks follow it (they are covered by
  // it, FIRST_READ_COVERED_BY). One chain of mark moves per covering pass, so they never cross.
  const covers = new Map<
    PassPlan['pass'],
    { upTo: string | null; followers: PassPlan['pass'][]; marks: Promise<void> }
  >();
  const coverOf = (pass: PassPlan['pass']) => {
    const known = covers.get(pass);
    if (known) return known;
    const fresh = { upTo: null, followers: [], marks: Promise.resolve() };
    covers.set(pass, fresh);
    return fresh;
  };
  const moveMarks = (cover: ReturnType<typeof coverOf>, streams: () => readonly string[], value: string) => {
    cover.marks = cover.marks.then(async () => {
      for (const stream of streams()) await bookkeeping.advanceHighWaterMark({ stream, value });
    });
  };
  return passPlans.map((initial) => {
    const entry = track(ctx, initial.pass);
    entry.windowsTotal = initial.windows.length;
    return () =>
      runStream(entry, async () => {
        let passPlan = initial;
        if (initial.awaitHistory) {
          entry.current = 'waiting for the first ticket sweep (it finds where the history starts)';
          const sweepComplete = await ticketsListed;
          entry.current = null;
          // A sweep that failed leaves the start unknown: the exports then plan from a provisional start
          // (streams do not take each other down).
          const replanned = (
            await bookkeeping.planRun(
              sweepComplete ? ctx.planInput : { ...ctx.planInput, historyFallback: true },
            )
          ).passes.find((p) => p.pass === initial.pass);
          if (!replanned) {
            throw ApplicationFailure.nonRetryable(
              `${initial.pass}: the history start is unknown — set SYNC_START_DATE, or sync tickets (its first complete sweep finds the oldest ticket)`,
              'HistoryStartUnknown',
            );
          }
          passPlan = replanned;
          entry.windowsTotal = passPlan.windows.length;
        }
        // The first read of a pass another one covers: known at planning, or once this run's ticket sweep
        // has found the oldest ticket. Covered, it reads only the windows queued for a re-read and its mark
        // follows the covering pass's.
        if (passPlan.coverPending) {
          entry.current = 'waiting for the ticket sweep (it tells whether another pass covers this one)';
          const sweepComplete = await ticketsListed;
          entry.current = null;
          const replanned = sweepComplete
            ? (await bookkeeping.planRun({ ...ctx.planInput, coverPendingSinceStart: true })).passes.find(
                (p) => p.pass === passPlan.pass,
              )
            : undefined;
          if (replanned?.coveredBy) passPlan = replanned;
          entry.windowsTotal = passPlan.windows.length;
        }
        const coveredBy = passPlan.coveredBy ?? null;
        if (coveredBy) {
          const cover = coverOf(coveredBy);
          cover.followers.push(passPlan.pass);
          if (cover.upTo) moveMarks(cover, () => [passPlan.pass], cover.upTo);
          await cover.marks;
        }
        const movesOwnMark = passPlan.advanceHighWaterMark && !coveredBy;
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
        const runWindow = (window: PassPlan['windows'][number]) =>
          child(
            ctx,
            entry,
            { stream: streamOfPass(passPlan.pass), name: passPlan.pass, ...window },
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
                    mode,
                    patienceMs,
                  },
                ],
              }),
          );
        // Several windows at once: a window is a chain of dependent pages, each waiting for a workflow task
        // and a dispatch, so one window at a time would leave the class idle between pages (the analytics
        // budget still paces every page of the fleet). A window that fails does not stop the others
        // (on-call replays just that one and the coverage has no gap); this lane moves the high-water mark,
        // one move at a time, over the contiguous prefix of complete windows.
        const failures: unknown[] = [];
        const done = passPlan.windows.map((w) =>
          skip.has(windowWorkflowId(passPlan.pass, w.windowStart, w.windowEnd)),
        );
        entry.windowsDone += done.filter(Boolean).length;
        let prefix = 0;
        const own = coverOf(passPlan.pass);
        const advance = () => {
          let next = prefix;
          while (next < done.length && done[next]) next += 1;
          if (next === prefix) return;
          prefix = next;
          own.upTo = passPlan.windows[next - 1]!.windowEnd;
          moveMarks(own, () => [passPlan.pass, ...own.followers], own.upTo);
        };
        const tasks = passPlan.windows.flatMap((window, i) =>
          done[i]
            ? []
            : [
                async () => {
                  await runWindow(window);
                  done[i] = true;
                  if (movesOwnMark) advance();
                },
              ],
        );
        for (const result of await allSettledWithLimit(tasks, EXPORT_WINDOWS_AT_ONCE)) {
          if (result.status === 'rejected') failures.push(result.reason);
        }
        await own.marks;
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
      });
  });
}
