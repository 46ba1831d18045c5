import { type TicketsInput, threadCutoffOf } from '../schemas/child-inputs.js';
import type { ChildProgress, StreamCounts } from '../schemas/run-summary.js';
import { encodeStateKey } from '../schemas/state-key.js';
import { STREAMS } from '../schemas/streams.js';
import { bookkeeping, classActivities } from './activity-proxies.js';
import { pageGuard } from './page-guard.js';
import { readPages } from './page-loop.js';
import { trackChildProgress } from './progress.js';
import { recordedWindow } from './window-ledger.js';

/**
 * The tickets stream of one run (architecture decision 4). `GET /tickets` has no change filter and lists
 * newest first, but listing is cheap and threads are dear, so every run lists the whole workspace — the
 * sweep — and spends detail requests only on what changed (the pages queue those threads):
 *  1. a head pass, when a sweep begun by an earlier run is continued: the newest tickets down to the last
 *     high-water mark minus the look-back (and the thread look-back);
 *  2. the sweep, from its cursor, within the run's list budget; a larger workspace is swept across runs;
 *  3. a complete sweep marks every ticket it did not see deleted (`_deleted_at`), and then a new sweep
 *     begins with the next run;
 *  4. the high-water mark moves when this run listed from the top down to the previous one; messages and
 *     surveys follow their ticket's deletion (those of the run's streams: `followers`).
 * The result's `sweepComplete` tells the parent that the history start is known (the first sweep finds it).
 */
async function ticketsWorkflowBody(input: TicketsInput): Promise<StreamCounts & { sweepComplete: boolean }> {
  const progress = trackChildProgress(null, input.carried);
  const seen = input.seen ?? { newest: null, coveredDownTo: null, headDone: false, listPages: 0 };
  const budgetLeft = () =>
    input.sweep?.maxPages == null
      ? Number.POSITIVE_INFINITY
      : Math.max(0, input.sweep.maxPages - seen.listPages);
  const readList = ticketListReader(input, progress, seen);

  if (input.head && !seen.headDone) {
    progress.detail = `newest tickets down to ${input.head.since}`;
    await readList(
      encodeStateKey({ kind: 'head_pass', before: input.before }).scope,
      input.head.since,
      true,
      () => ({
        ...input,
        seen,
      }),
    );
    seen.headDone = true;
  }

  let sweepComplete = false;
  if (input.sweep) {
    const begun = await bookkeeping.beginSweep({ restart: input.sweep.restart });
    // After a continue-as-new the sweep begun above is continued, not begun again.
    const carryOn: TicketsInput = { ...input, sweep: { ...input.sweep, restart: false } };
    // A sweep that begins in this run starts at the newest ticket: it is this run's pass from the top.
    const fromTop = begun.resumedAtPage === 0 && !input.head;
    progress.detail = `sweep since ${begun.startedAt} (page ${begun.resumedAtPage + 1})`;
    sweepComplete = await readList(
      encodeStateKey({ kind: 'sweep' }).scope,
      null,
      fromTop,
      () => ({ ...carryOn, seen }),
      budgetLeft,
    );
    if (sweepComplete) await bookkeeping.finishSweep();
  }

  // The mark may move only over a contiguous listing from the top reaching the previous mark's look-back
  // (or, the first time, any listing from the top): else the next head pass must look further down.
  const reachedFloor =
    seen.coveredDownTo !== null &&
    (input.headFloor === null || Date.parse(seen.coveredDownTo) <= Date.parse(input.headFloor));
  await bookkeeping.finishTickets({
    newest: reachedFloor ? seen.newest : null,
    followers: input.followers,
  });
  return {
    pages: progress.pages,
    rows: progress.rows,
    requests: progress.requests,
    windows: 1,
    sweepComplete,
  };
}

/** The window, with its own attempts in the ledger (workflows/window-ledger.ts). */
export async function ticketsWorkflow(input: TicketsInput) {
  return recordedWindow(
    {
      stream: 'tickets',
      windowStart: input.head?.since ?? input.headFloor,
      windowEnd: input.before,
      mode: input.mode,
    },
    input,
    ticketsWorkflowBody,
  );
}

/** What the listing has seen so far, carried over a continue-as-new. */
type ListingSeen = NonNullable<TicketsInput['seen']>;

/**
 * Reads pages of one listing scope — from the list's top or a resumed sweep (`fromTop`) — until done or out
 * of budget (`budget`), keeping in `seen` the newest ticket listed, how far down from the top the listing
 * reached, and the pages it took.
 */
function ticketListReader(input: TicketsInput, progress: ChildProgress, seen: ListingSeen) {
  const list = classActivities(STREAMS.tickets.routeClass, { patienceMs: input.patienceMs });
  const threadCutoff = threadCutoffOf(input.mode, input.before, input.threadLookbackMs);
  const guard = pageGuard('tickets', input.cursorProbes);
  return (
    scope: string,
    stopBelow: string | null,
    fromTop: boolean,
    carryOn: () => object,
    budget?: () => number,
  ) =>
    readPages({
      input,
      scope,
      guard,
      progress,
      read: (options) =>
        list.syncTicketsPages({
          scope,
          stopBelow,
          pageSize: input.pageSize,
          threadCutoff,
          queueAll: input.queueAllThreads,
          runId: input.runId,
          ...options,
        }),
      // Unchanged tickets are listed, not written.
      rows: (page) => page.changed,
      onPage: (page) => {
        seen.listPages += 1;
        if (page.newest && (!seen.newest || Date.parse(page.newest) > Date.parse(seen.newest)))
          seen.newest = page.newest;
        if (fromTop && page.oldest) seen.coveredDownTo = page.oldest;
      },
      carryOn,
      ...(budget ? { budget } : {}),
    });
}
