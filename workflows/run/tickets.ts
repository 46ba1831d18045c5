import { executeChild, startChild } from '@temporalio/workflow';
import type { StreamProgress } from '../../schemas/run-summary.js';
import { THREADS_STREAM, TICKET_FOLLOWERS } from '../../schemas/streams.js';
import { threadsWorkflow } from '../threads.js';
import { ticketsWorkflow } from '../tickets.js';
import { child, type Lane, type RunContext, runStream, track } from './context.js';
import type { LaneCoordinator } from './coordinator.js';

/**
 * The tickets and their threads (architecture decision 4): the tickets child lists the workspace and
 * queues the threads to read; the threads child, started first, reads them as they are queued, then the
 * rolling re-read. Without tickets, the threads alone drain whatever the last tickets run queued. How they
 * wait for each other, and the exports for the listing: `coordinator`.
 */
export function ticketsLanes(ctx: RunContext, coordinator: LaneCoordinator): Lane[] {
  const { runId, mode, settings, patienceMs, plan, deletionSince, startedAt, before } = ctx;
  const fullRefresh = mode === 'full_refresh';
  const withThreads = ctx.input.streams.includes(THREADS_STREAM);
  if (!plan.tickets) {
    if (!withThreads) {
      coordinator.listing.resolve(false);
      return [];
    }
    const entry = track(ctx, THREADS_STREAM);
    entry.windowsTotal = 1;
    const lane = () =>
      runStream(entry, () =>
        syncThreads(ctx, coordinator, entry, startedAt, { awaitTickets: false, fullRefreshSince: null }),
      );
    coordinator.listing.resolve(false);
    return [lane];
  }

  const tickets = plan.tickets;
  const ticketsEntry = track(ctx, 'tickets');
  const threadsEntry = withThreads ? track(ctx, THREADS_STREAM) : null;
  ticketsEntry.windowsTotal = 1;
  if (threadsEntry) threadsEntry.windowsTotal = 1;
  const from = tickets.head?.since ?? tickets.headFloor ?? plan.historyStart ?? '1970-01-01T00:00:00.000Z';
  const lane = () =>
    runStream(ticketsEntry, async () => {
      // Threads start with the tickets: each tickets page queues its changed threads as it commits.
      const threads = threadsEntry
        ? runStream(threadsEntry, () =>
            syncThreads(ctx, coordinator, threadsEntry, from, {
              awaitTickets: true,
              fullRefreshSince: fullRefresh ? deletionSince : null,
            }),
          )
        : null;
      if (threads) await Promise.race([coordinator.threadsReady, threads.catch(() => undefined)]);
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
        // Whatever happened to the listing, the threads it queued are read.
        await coordinator.listingEnded(sweepComplete);
      }
      await threads;
    });
  return [lane];
}

/**
 * The thread queue drained by one child, started while the tickets are still being listed (it waits for
 * `ticketsListed`), then the rolling re-read; on a full refresh it also marks messages gone from the source.
 */
async function syncThreads(
  ctx: RunContext,
  coordinator: LaneCoordinator,
  entry: StreamProgress,
  from: string,
  options: { awaitTickets: boolean; fullRefreshSince: string | null },
): Promise<void> {
  const { runId, mode, settings, patienceMs, deletionSince, before } = ctx;
  await child(
    ctx,
    entry,
    { stream: THREADS_STREAM, windowStart: from, windowEnd: before },
    async (childOpts) => {
      const handle = await startChild(threadsWorkflow, {
        ...childOpts,
        args: [
          {
            runId,
            concurrency: settings.threadConcurrency,
            fullRefreshSince: options.fullRefreshSince,
            awaitTickets: options.awaitTickets,
            runIdle: coordinator.othersSettled,
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
      await coordinator.threadsStarted(handle);
      return handle.result();
    },
  );
}
