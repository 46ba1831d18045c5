import { z } from 'zod';
import { MAX_EXPORT_WINDOW_MS } from './api/exports.js';

/**
 * The pipeline's own plain-JSON shapes: stream names, run and window inputs, progress. Workflow inputs are
 * parsed with these in the CLI (and in activities), so a run started from the Temporal UI's
 * "start workflow like this one" form is validated as strictly as one started by the CLI.
 */

/** Streams as users name them (CLI `--streams`, `_sync_runs.stream`, the `SyncStream` search attribute). */
export const StreamName = z.enum([
  'views',
  'tags',
  'teams',
  'agents',
  'metric_catalog',
  'tickets',
  'ticket_messages',
  'csat_surveys',
  'agent_sessions',
  'report_snapshots',
]);
export type StreamName = z.infer<typeof StreamName>;
export const ALL_STREAMS = StreamName.options;

export const ReferenceStream = z.enum(['views', 'tags', 'teams', 'agents', 'metric_catalog']);
export type ReferenceStream = z.infer<typeof ReferenceStream>;

/**
 * Export passes, each with its own windows and high-water mark. CSAT is read twice: by sent date (every
 * survey, answered or not, exactly once) and by submitted date (every answer since the last run, however
 * late after sending) — together exact without re-reading months of sent windows.
 */
export const ExportPass = z.enum(['csat_surveys.sent', 'csat_surveys.submitted', 'agent_sessions']);
export type ExportPass = z.infer<typeof ExportPass>;
export const EXPORT_PASSES: Record<'csat_surveys' | 'agent_sessions', ExportPass[]> = {
  csat_surveys: ['csat_surveys.sent', 'csat_surveys.submitted'],
  agent_sessions: ['agent_sessions'],
};
export function streamOfPass(pass: ExportPass): 'csat_surveys' | 'agent_sessions' {
  return pass === 'agent_sessions' ? 'agent_sessions' : 'csat_surveys';
}

export const SyncMode = z.enum(['incremental', 'full_refresh', 'backfill', 'replay']);
export type SyncMode = z.infer<typeof SyncMode>;

const Instant = z.iso.datetime({ offset: true });

export const SyncSettings = z.object({
  /** Where the first sync starts. */
  startDate: Instant,
  /** Re-read range before each high-water mark. */
  lookbackMs: z.number().int().nonnegative(),
  /** Export window size (≤ 90 × 24 h). */
  windowMs: z.number().int().positive().max(MAX_EXPORT_WINDOW_MS),
  /**
   * Threads of tickets created within this range of the run are re-read even when `updated_at` did not
   * move (the spec does not promise that a new message moves it). Older tickets: next full refresh.
   */
  threadLookbackMs: z.number().int().nonnegative(),
  pageSize: z.number().int().min(1).max(100),
  /** Streams run at once by the parent workflow. */
  streamParallelism: z.number().int().min(1).max(9),
  /** Tickets whose threads one activity syncs (each thread committed on its own). */
  threadBatchSize: z.number().int().min(1).max(500),
  /** Threads fetched at once inside that activity (the governor paces the detail class). */
  threadConcurrency: z.number().int().min(1).max(32),
  /** Task queue of analytics-class activities (server-enforced rate). */
  analyticsTaskQueue: z.string().min(1),
  /** Ask the CSAT export for comments (needs `tickets:read` besides `analytics:read`). */
  csatIncludeComments: z.boolean(),
  /** Saved report queries (REPORT_QUERIES) snapshotted by the `report_snapshots` stream; none by default. */
  reportQueries: z.array(z.lazy(() => ReportQuery)).optional(),
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
});
export type SyncRunInput = z.infer<typeof SyncRunInput>;

/** Counts carried over a continue-as-new, so a run's totals include the pages of its earlier runs. */
export const CarriedCounts = z.object({
  pages: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
});
export type CarriedCounts = z.infer<typeof CarriedCounts>;

export const WindowInput = z.object({
  runId: z.string().min(1),
  pass: ExportPass,
  windowStart: Instant,
  windowEnd: Instant,
  pageSize: z.number().int().min(1).max(100),
  analyticsTaskQueue: z.string().min(1),
  includeComments: z.boolean(),
  /** Move the pass's high-water mark to windowEnd when complete (not for replays of old windows). */
  advanceHighWaterMark: z.boolean(),
  carried: CarriedCounts.optional(),
});
export type WindowInput = z.infer<typeof WindowInput>;

export const TicketsInput = z.object({
  runId: z.string().min(1),
  mode: SyncMode,
  /** Page down to tickets created before this instant (null: everything, i.e. full refresh). */
  since: Instant.nullable(),
  before: Instant,
  pageSize: z.number().int().min(1).max(100),
  threadLookbackMs: z.number().int().nonnegative(),
  /** Full refresh: tickets not received since this instant (workers' clock) are marked deleted. */
  deletionSince: Instant.nullable().default(null),
  carried: CarriedCounts.optional(),
});
export type TicketsInput = z.infer<typeof TicketsInput>;

const IanaZone = z.string().refine(
  (tz) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  },
  { message: 'must be an IANA time zone such as Europe/Berlin or UTC' },
);

/** A saved report query (one entry of the REPORT_QUERIES file): sent to `POST /reports/query` as is. */
export const ReportQuery = z.strictObject({
  /** Names the query in `_sync_state` (scope), failures and the docs; unique within the file. */
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, {
    message: 'must be 1–100 letters, digits, "_", "." or "-", starting with a letter or digit',
  }),
  query: z.string().trim().min(1, { message: 'must be a non-empty report query' }),
  timezone: IanaZone,
  /**
   * Its own schedule (`schedule create` makes one Temporal schedule per such query, running only this
   * query's snapshot); without it the query is taken by every sync run.
   */
  schedule: z
    .strictObject({
      cron: z
        .string()
        .trim()
        .regex(/^\S+( \S+){4}$/, { message: 'must be a 5-field cron expression such as "0 6 * * *"' }),
      timezone: IanaZone,
    })
    .optional(),
});
export type ReportQuery = z.infer<typeof ReportQuery>;

/** The report snapshots of one run: every query taken at `takenAt` (the run's upper bound). */
export const ReportSnapshotsInput = z.object({
  runId: z.string().min(1),
  takenAt: Instant,
  queries: z.array(ReportQuery),
  analyticsTaskQueue: z.string().min(1),
});
export type ReportSnapshotsInput = z.infer<typeof ReportSnapshotsInput>;

export const ReferenceInput = z.object({
  runId: z.string().min(1),
  /**
   * After a complete snapshot, rows not received since this instant (on the workers' clock, which also
   * stamps `_synced_at`) are marked deleted. Null: do not mark (older inputs).
   */
  deletionSince: Instant.nullable().default(null),
  stream: ReferenceStream,
  pageSize: z.number().int().min(1).max(100),
  carried: CarriedCounts.optional(),
});
export type ReferenceInput = z.infer<typeof ReferenceInput>;

export const ThreadsInput = z.object({
  runId: z.string().min(1),
  /**
   * Full refresh: the tickets crawl queued every thread; once the queue is drained, messages not re-read
   * since this instant are marked deleted. Null otherwise.
   */
  fullRefreshSince: Instant.nullable(),
  batchSize: z.number().int().min(1),
  concurrency: z.number().int().min(1),
  carried: CarriedCounts.optional(),
});
export type ThreadsInput = z.infer<typeof ThreadsInput>;

/** Counts a stream or window workflow returns and reports (never rows). */
export const StreamCounts = z.object({
  pages: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  windows: z.number().int().nonnegative(),
});
export type StreamCounts = z.infer<typeof StreamCounts>;

export const StreamProgress = z.object({
  status: z.enum(['pending', 'running', 'succeeded', 'failed']),
  windowsTotal: z.number().int().nonnegative(),
  windowsDone: z.number().int().nonnegative(),
  pages: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  current: z.string().nullable(),
  error: z.string().nullable(),
});
export type StreamProgress = z.infer<typeof StreamProgress>;

/** Input of the reconciliation after a run (activities/reconcile.ts). */
export const ReconcileInput = z.object({
  runId: z.string().min(1),
  /** The run's upper bound: the compared days are the `days` complete UTC days before its day. */
  before: Instant,
  days: z.number().int().min(1).max(90),
  /** Compare saved views' counts too (only when the views stream ran in this run). */
  views: z.boolean(),
});
export type ReconcileInput = z.infer<typeof ReconcileInput>;

/** What the reconciliation found; mismatches are warnings (spec 2.11 rule 3), never a failed run. */
export const ReconcileSummary = z.object({
  equal: z.number().int().nonnegative(),
  mismatch: z.number().int().nonnegative(),
  skipped: z.number().int().nonnegative(),
  /** The first few mismatches, one line each. */
  mismatches: z.array(z.string()),
  /** Set when the check itself could not run (recorded as a warning). */
  error: z.string().optional(),
});
export type ReconcileSummary = z.infer<typeof ReconcileSummary>;

export const RunProgress = z.object({
  runId: z.string(),
  mode: SyncMode,
  status: z.enum(['running', 'succeeded', 'failed']),
  streams: z.record(z.string(), StreamProgress),
  /** The reconciliation after the streams, when the run synced tickets. */
  reconciliation: ReconcileSummary.optional(),
});
export type RunProgress = z.infer<typeof RunProgress>;

/** Live counts of one child workflow (its `progress` query). */
export const ChildProgress = z.object({ pages: z.number(), rows: z.number(), detail: z.string().nullable() });
export type ChildProgress = z.infer<typeof ChildProgress>;

/** `<stream>/<from>/<before>`: the window workflow id on-call searches for. */
export function windowWorkflowId(pass: string, from: string, before: string): string {
  return `${pass}/${from}/${before}`;
}
