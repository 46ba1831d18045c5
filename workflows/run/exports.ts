import { ApplicationFailure, executeChild, patched } from '@temporalio/workflow';
import type { RunPlan } from '../../activities/index.js';
import { EXPORT_PASSES, EXPORT_STREAMS, streamOfPass, windowWorkflowId } from '../../schemas/sync.js';
import { bookkeeping } from '../activity-proxies.js';
import { exportWindowWorkflow } from '../export-window.js';
import { messageOf } from '../failures.js';
import { child, type Lane, type RunContext, runStream, track } from './context.js';

type PassPlan = RunPlan['passes'][number] & { awaitHistory?: true };

/**
 * The export passes (CSAT by sent and by submitted date, agent sessions), one lane each, window by window.
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
