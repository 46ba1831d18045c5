import { ApplicationFailure, executeChild, patched } from '@temporalio/workflow';
import type { RunPlan } from '../../activities/index.js';
import { EXPORT_PASSES, EXPORT_STREAMS, streamOfPass, windowWorkflowId } from '../../schemas/sync.js';
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
export function exportLanes(ctx: RunContext, ticketsListed: Promise<boolean>): Lane[] {
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
          // (streams do not take each other down). patched: older histories replan without the fallback.
          const fallback = !sweepComplete && patched('history-fallback');
          const replanned = (
            await bookkeeping.planRun(fallback ? { ...ctx.planInput, historyFallback: true } : ctx.planInput)
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
        const runWindow = (window: PassPlan['windows'][number], advanceHighWaterMark: boolean) =>
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
                    advanceHighWaterMark,
                    mode,
                    patienceMs,
                  },
                ],
              }),
          );
        // A window that fails does not stop the later ones (on-call replays just that one and the coverage
        // has no gap); the high-water mark only moves over the contiguous run of complete windows before it.
        const failures: unknown[] = [];
        if (patched('export-windows-at-once')) {
          // Several windows at once (issue 22): one window is a chain of dependent pages, each waiting for a
          // workflow task and a dispatch, so a pass read one window at a time left the class idle between
          // pages. The analytics task queue's rate still paces every page of the fleet. The windows no
          // longer move the mark themselves: this lane moves it, one move at a time, over the complete prefix.
          const done = passPlan.windows.map((w) =>
            skip.has(windowWorkflowId(passPlan.pass, w.windowStart, w.windowEnd)),
          );
          entry.windowsDone += done.filter(Boolean).length;
          let prefix = 0;
          let marks = Promise.resolve();
          const advance = () => {
            let next = prefix;
            while (next < done.length && done[next]) next += 1;
            if (next === prefix) return;
            prefix = next;
            const value = passPlan.windows[next - 1]!.windowEnd;
            marks = marks.then(async () => {
              await bookkeeping.advanceHighWaterMark({ stream: passPlan.pass, value });
            });
          };
          const tasks = passPlan.windows.flatMap((window, i) =>
            done[i]
              ? []
              : [
                  async () => {
                    await runWindow(window, false);
                    done[i] = true;
                    if (passPlan.advanceHighWaterMark) advance();
                  },
                ],
          );
          for (const result of await allSettledWithLimit(tasks, EXPORT_WINDOWS_AT_ONCE)) {
            if (result.status === 'rejected') failures.push(result.reason);
          }
          await marks;
        } else {
          // Oldest first and one at a time (histories recorded before export-windows-at-once).
          for (const window of passPlan.windows) {
            if (skip.has(windowWorkflowId(passPlan.pass, window.windowStart, window.windowEnd))) {
              entry.windowsDone += 1;
              continue;
            }
            try {
              await runWindow(window, passPlan.advanceHighWaterMark && failures.length === 0);
            } catch (err) {
              failures.push(err);
            }
          }
        }
        if (failures.length === 1) throw failures[0];
        if (failures.length > 1)
          throw ApplicationFailure.nonRetryable(failures.map(messageOf).join('; '), 'StreamFailed');
        // A full refresh re-read every survey sent since the start date: those it did not receive (their
        // ticket was deleted, spec 2.7 rule 7) are gone. Only that range: older rows were not re-read.
        if (mode === 'full_refresh' && passPlan.pass === 'csat_surveys.sent' && passPlan.windows.length > 0) {
          await bookkeeping.markUnseenDeleted({
            table: 'csat_surveys',
            since: deletionSince,
            within: { column: 'sent_at', from: passPlan.windows[0]!.windowStart },
          });
        }
      });
  });
}
