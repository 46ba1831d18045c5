import { z } from 'zod';
import { MAX_EXPORT_WINDOW_MS } from './api/exports.js';
import { AuditRequests } from './audit.js';
import { ReportQuery } from './report-query.js';
import { StreamName } from './streams.js';

/**
 * What a sync run is asked to do: its mode, streams and settings. Parsed in the CLI (and in activities), so a
 * run started from the Temporal UI's "start workflow like this one" form is validated as strictly as one
 * started by the CLI.
 */

export const SyncMode = z.enum(['incremental', 'full_refresh', 'backfill', 'replay']);
export type SyncMode = z.infer<typeof SyncMode>;

/**
 * Temporal task-queue priority of a run (1 = first): when streams compete for one route class's queue,
 * the scheduled runs go first, then backfills, then replays. Child workflows and activities inherit it.
 */
export const RUN_PRIORITY: Readonly<Record<SyncMode, number>> = {
  incremental: 1,
  full_refresh: 2,
  backfill: 4,
  replay: 5,
};

/** An instant with `Z` or an explicit offset, as workflow inputs carry it. */
export const Instant = z.iso.datetime({ offset: true });

/**
 * With no SYNC_START_DATE, exports start this long before the workspace's oldest ticket (`created_at`).
 * One export window (90 × 24 h): it costs at most one extra, possibly empty, request per export pass, once,
 * and covers what precedes the first ticket — agents logging in while the workspace was set up. Surveys
 * need no margin: a survey is sent on an existing ticket.
 */
export const HISTORY_MARGIN_MS = MAX_EXPORT_WINDOW_MS;

export const SyncSettings = z.object({
  /**
   * Where the exports' history starts. Null (the default): from the workspace's own history, the oldest
   * ticket's `created_at` minus HISTORY_MARGIN_MS, found by the first complete ticket sweep.
   */
  startDate: Instant.nullable(),
  /** Re-read range before each high-water mark. */
  lookbackMs: z.number().int().nonnegative(),
  /** Export window size (≤ 90 × 24 h). */
  windowMs: z.number().int().positive().max(MAX_EXPORT_WINDOW_MS),
  /**
   * Threads of tickets created within this range of the run are re-read even when `updated_at` did not
   * move (the spec does not promise that a new message moves it). Older tickets: next full refresh.
   */
  threadLookbackMs: z.number().int().nonnegative(),
  /**
   * List pages one run may spend on the ticket sweep (head pass included). A larger workspace is swept
   * across runs, resuming from the sweep's cursor; null = no limit (a full refresh).
   */
  sweepPagesPerRun: z.number().int().positive().nullable(),
  /**
   * Threads of unchanged tickets re-read per run at most, oldest read first (the rolling re-read: messages
   * need not move `updated_at`): only on detail budget the run's other streams leave, and one round
   * (REVERIFY_ROUND) a run at least (workflows/threads.ts). 0 = off.
   */
  threadReverifyPerRun: z.number().int().nonnegative(),
  pageSize: z.number().int().min(1).max(100),
  /** How long a page may keep failing (an outage) before its window fails. */
  sourcePatienceMs: z.number().int().positive().optional(),
  /** Streams run at once by the parent workflow. */
  streamParallelism: z.number().int().min(1).max(16),
  /** Threads read at once (the detail task queue's rate paces them). */
  threadConcurrency: z.number().int().min(1).max(64),
  /** Task queue of analytics-class activities (server-enforced rate). */
  analyticsTaskQueue: z.string().min(1),
  /** Ask the CSAT export for comments (needs `tickets:read` besides `analytics:read`). */
  csatIncludeComments: z.boolean(),
  /** Saved report queries (REPORT_QUERIES) snapshotted by the `report_snapshots` stream; none by default. */
  reportQueries: z.array(ReportQuery).optional(),
  /**
   * Requests per route class the audit after the run may send (SYNC_AUDIT_SHARE of each class's limit per
   * rate window); absent (a share of 0): no audit.
   */
  auditRequests: AuditRequests.optional(),
});
export type SyncSettings = z.infer<typeof SyncSettings>;

export const SyncRunInput = z.object({
  /** Empty for scheduled runs: the run then takes its workflow id (unique per schedule fire). */
  runId: z.string(),
  mode: SyncMode,
  streams: z.array(StreamName).min(1),
  settings: SyncSettings,
  /** Backfill: the range to (re-)read for export streams and how far down to page tickets. */
  range: z.object({ from: Instant, before: Instant }).optional(),
  /**
   * Backfill: also re-read the windows that already succeeded (by default they are skipped, so the same
   * backfill command run again — after Ctrl-C, say — continues where it was).
   */
  force: z.boolean().optional(),
});
export type SyncRunInput = z.infer<typeof SyncRunInput>;
