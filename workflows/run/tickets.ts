import { type ChildWorkflowHandle, executeChild, startChild } from '@temporalio/workflow';
import { type StreamProgress, TICKET_FOLLOWERS } from '../../schemas/sync.js';
import { runIdleSignal, threadsWorkflow, ticketsListedSignal } from '../threads.js';
import { ticketsWorkflow } from '../tickets.js';
import { child, type Lane, type RunContext, runStream, track } from './context.js';

/**
 * The threads child of the run, and whether every other stream has settled: the rolling thread re-read
 * goes on while they are busy (the detail budget would idle) and may stop at its minimum once they are.
 */
export interface ThreadsLink {
  othersSettled: boolean;
  handle: ChildWorkflowHandle<typeof threadsWorkflow> | undefined;
}

/** Every stream but tickets and threads has settled: the threads child is told so (`runIdle`). */
export async function othersSettled(link: ThreadsLink): Promise<void> {
  link.othersSettled = true;
  await link.handle?.signal(runIdleSignal).catch(() => undefined);
}

/**
 * The tickets and their threads (architecture decision 4): the tickets child lists the workspace and
 * queues the threads to read; the threads child, started first, reads them as they are queued, then the
 * rolling re-read. Without tickets, the threads alone drain whatever the last tickets run queued. `listed`
 * settles when the listing has ended, with whether the sweep completed (it finds where history starts).
 */
export function ticketsLanes(
  ctx: RunContext,
  link: ThreadsLink,
): { lanes: Lane[]; listed: Promise<boolean> } {
  const { runId, mode, settings, patienceMs, plan, deletionSince, startedAt, before } = ctx;
  const fullRefresh = mode === 'full_refresh';
  const withThreads = ctx.input.streams.includes('ticket_messages');
  if (!plan.tickets) {
    if (!withThreads) return { lanes: [], listed: Promise.resolve(false) };
    const entry = track(ctx, 'ticket_messages');
    entry.windowsTotal = 1;
    const lane = () =>
      runStream(entry, () =>
        syncThreads(ctx, link, entry, startedAt, { awaitTickets: false, fullRefreshSince: null }),
      );
    return { lanes: [lane], listed: Promise.resolve(false) };
  }

  const tickets = plan.tickets;
  const ticketsEntry = track(ctx, 'tickets');
  const threadsEntry = withThreads ? track(ctx, 'ticket_messages') : null;
  ticketsEntry.windowsTotal = 1;
  if (threadsEntry) threadsEntry.windowsTotal = 1;
  const from = tickets.head?.since ?? tickets.headFloor ?? plan.historyStart ?? '1970-01-01T00:00:00.000Z';
  let listed!: (sweepComplete: boolean) => void;
  const ticketsListed = new Promise<boolean>((resolve) => {
    listed = resolve;
  });
  const lane = () =>
    runStream(ticketsEntry, async () => {
      // Threads start with the tickets: each tickets page queues its changed threads as it commits.
      let threadsStarted!: () => void;
      const started = new Promise<void>((resolve) => {
        threadsStarted = resolve;
      });
      const threads = threadsEntry
        ? runStream(threadsEntry, () =>
            syncThreads(ctx, link, threadsEntry, from, {
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
          ctx,
          ticketsEntry,
          { stream: 'tickets', windowStart: from, windowEnd: before },
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
                  followers: TICKET_FOLLOWERS.filter((s) => ctx.input.streams.includes(s)),
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
        await link.handle?.signal(ticketsListedSignal).catch(() => undefined);
      }
      await threads;
    });
  return { lanes: [lane], listed: ticketsListed };
}

/**
 * The thread queue drained by one child, started while the tickets are still being listed (it waits for
 * `ticketsListed`), then the rolling re-read; on a full refresh it also marks messages gone from the source.
 */
async function syncThreads(
  ctx: RunContext,
  link: ThreadsLink,
  entry: StreamProgress,
  from: string,
  options: { awaitTickets: boolean; fullRefreshSince: string | null; onStarted?: () => void },
): Promise<void> {
  const { runId, mode, settings, patienceMs, deletionSince, before } = ctx;
  await child(
    ctx,
    entry,
    { stream: 'ticket_messages', windowStart: from, windowEnd: before },
    async (childOpts) => {
      const handle = await startChild(threadsWorkflow, {
        ...childOpts,
        args: [
          {
            runId,
            concurrency: settings.threadConcurrency,
            fullRefreshSince: options.fullRefreshSince,
            awaitTickets: options.awaitTickets,
            runIdle: link.othersSettled,
            mode,
            patienceMs,
            // The rolling re-read belongs to the runs that keep the warehouse current, not to backfills.
            reverify:
              settings.threadReverifyPerRun > 0 && (mode === 'incremental' || mode === 'full_refresh')
                ? { max: settings.threadReverifyPerRun, runStartedAt: deletionSince }
                : null,
            reverified: 0,
          },
        ],
      });
      link.handle = handle;
      if (link.othersSettled) await handle.signal(runIdleSignal);
      options.onStarted?.();
      return handle.result();
    },
  );
}
