import { z } from 'zod';
import { Instant, SyncMode } from './run-input.js';
import { ExportPass, TicketFollower } from './streams.js';

/**
 * What each child workflow of a run (the tickets, the threads, an export window) takes: the common part
 * (ChildInput) and each child's own, as the run workflow starts them.
 */

/** Counts carried over a continue-as-new, so a run's totals include the pages of its earlier runs. */
export const CarriedCounts = z.object({
  pages: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  /** HTTP requests sent (retries included). */
  requests: z.number().int().nonnegative().optional(),
});
export type CarriedCounts = z.infer<typeof CarriedCounts>;

/** The execution of a window workflow that began an attempt (its ledger row), carried over continue-as-new. */
export const WindowAttempt = z.object({ id: z.string().min(1), startedAt: Instant });
export type WindowAttempt = z.infer<typeof WindowAttempt>;

/**
 * What every child workflow of a run (a stream or window) takes besides its own work: the run it belongs
 * to, its attempt in the ledger and how patient its pages are. Extended by each child's input.
 */
export const ChildInput = z.object({
  runId: z.string().min(1),
  /** How long a page may keep failing (an outage) before its window fails (SYNC_SOURCE_PATIENCE). */
  patienceMs: z.number().int().positive().optional(),
  /** The ledger row of this attempt (see workflows/window-ledger.ts); set by the workflow itself. */
  attempt: WindowAttempt.optional(),
  /** The run's mode, for the ledger. */
  mode: SyncMode,
});
export type ChildInput = z.infer<typeof ChildInput>;

/**
 * What a page guard carries of a scope over a continue-as-new (workflows/page-guard.ts): the tag of the
 * cursor it was given at the scope's last power-of-two page, and the pages of the scope it has seen.
 */
export const CursorProbe = z.object({
  scope: z.string().min(1),
  tag: z.string().min(1),
  pages: z.number().int().positive(),
});
export type CursorProbe = z.infer<typeof CursorProbe>;

/**
 * A child that reads page after page may continue as new; it carries its counts over, and its page guard's
 * probes of the scopes it has not finished.
 */
const PagingChildInput = ChildInput.extend({
  carried: CarriedCounts.optional(),
  cursorProbes: z.array(CursorProbe).optional(),
});

export const WindowInput = PagingChildInput.extend({
  pass: ExportPass,
  windowStart: Instant,
  windowEnd: Instant,
  pageSize: z.number().int().min(1).max(100),
  analyticsTaskQueue: z.string().min(1),
  includeComments: z.boolean(),
});
export type WindowInput = z.infer<typeof WindowInput>;
/**
 * The tickets stream of one run (architecture decision 4): an optional head pass (newest first, down to
 * `head.since`: the tickets created since the last run) and the sweep of the whole list, resumable across
 * runs. Every listed page rewrites only new or changed rows, records the others as seen, and queues the
 * threads to read.
 */
export const TicketsInput = PagingChildInput.extend({
  mode: SyncMode,
  before: Instant,
  pageSize: z.number().int().min(1).max(100),
  threadLookbackMs: z.number().int().nonnegative(),
  /** Page from the newest ticket down to tickets created before `since`; null: no head pass. */
  head: z.object({ since: Instant }).nullable(),
  /**
   * Continue (or, with `restart`, begin again) the sweep of the whole list; at most `maxPages` list pages in
   * this run, head pass included (null: no limit). Null: no sweep (a backfill).
   */
  sweep: z.object({ restart: z.boolean(), maxPages: z.number().int().positive().nullable() }).nullable(),
  /** The previous tickets high-water mark minus the look-back: how far down the head must reach. */
  headFloor: Instant.nullable(),
  /** Queue every listed ticket's thread (a full refresh), not only new or changed ones. */
  queueAllThreads: z.boolean(),
  /**
   * The followers this run selected: only their tables follow a ticket's deletion, a stream left out is
   * not touched (its rows follow when it is selected again).
   */
  followers: z.array(TicketFollower),
  /** What this run saw so far, carried over a continue-as-new. */
  seen: z
    .object({
      /** Newest `created_at` listed by this run. */
      newest: Instant.nullable(),
      /** The run's pass from the top reached down to here (contiguous). */
      coveredDownTo: Instant.nullable(),
      headDone: z.boolean(),
      listPages: z.number().int().nonnegative(),
    })
    .optional(),
});
export type TicketsInput = z.infer<typeof TicketsInput>;

/**
 * Tickets created at or after this instant have their thread queued whether or not `updated_at` moved (the
 * spec does not promise that a new message moves it); null on a full refresh, which queues every thread.
 */
export function threadCutoffOf(mode: SyncMode, before: string, threadLookbackMs: number): string | null {
  return mode === 'full_refresh' ? null : new Date(Date.parse(before) - threadLookbackMs).toISOString();
}

export const ThreadsInput = PagingChildInput.extend({
  /**
   * Threads are read while the tickets stream still lists (it queues them page by page); the parent
   * signals `ticketsListed` when it is done. False: the queue is complete already.
   */
  awaitTickets: z.boolean().default(false),
  /** The parent signalled `runIdle` already (carried over a continue-as-new, which loses signals' state). */
  runIdle: z.boolean().default(false),
  /**
   * Rolling re-read: threads of unchanged tickets read before `runStartedAt`, at most `max` this run
   * (SYNC_THREAD_REVERIFY_PER_RUN); null: none.
   */
  reverify: z.object({ max: z.number().int().nonnegative(), runStartedAt: Instant }).nullable().default(null),
  /** Threads re-read so far by this run, carried over a continue-as-new. */
  reverified: z.number().int().nonnegative().default(0),
  /**
   * Full refresh: the tickets crawl queued every thread; once the queue is drained, messages not re-read
   * since this instant are marked deleted. Null otherwise.
   */
  fullRefreshSince: Instant.nullable(),
  concurrency: z.number().int().min(1),
});
export type ThreadsInput = z.infer<typeof ThreadsInput>;
/**
 * Threads queued per round of the rolling re-read (workflows/threads.ts): enough to keep a few detail
 * requests in flight, few enough that the round in flight when the run's other streams finish ends within a
 * couple of seconds at the spec's 120 a minute. Every run reads one round at least.
 */
export const REVERIFY_ROUND = 4;
