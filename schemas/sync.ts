import { z } from 'zod';
import { MAX_EXPORT_WINDOW_MS } from './api/exports.js';
import { AuditRequests, AuditSummary } from './audit.js';
import { ExportPass, ReferenceStream, StreamName, type StreamRouteClass } from './streams.js';

/**
 * The pipeline's own plain-JSON shapes: stream names, run and window inputs, progress. Workflow inputs are
 * parsed with these in the CLI (and in activities), so a run started from the Temporal UI's
 * "start workflow like this one" form is validated as strictly as one started by the CLI.
 */

// What a stream is lives in the registry (schemas/streams.ts); these names are re-exported for the many
// places that know them from here.
export {
  ALL_STREAMS,
  EXPORT_PASSES,
  EXPORT_STREAMS,
  ExportPass,
  type ExportStream,
  FIRST_READ_COVERED_BY,
  REFERENCE_STREAMS,
  ReferenceStream,
  StreamName,
  streamOfPass,
} from './streams.js';

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

const Instant = z.iso.datetime({ offset: true });

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
  reportQueries: z.array(z.lazy(() => ReportQuery)).optional(),
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

/** Streams whose rows follow their ticket's deletion (messages; surveys also its return, spec 2.7 rule 7). */
export const TICKET_FOLLOWERS = ['ticket_messages', 'csat_surveys'] as const satisfies readonly StreamName[];
export const TicketFollower = z.enum(TICKET_FOLLOWERS);
export type TicketFollower = z.infer<typeof TicketFollower>;

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
export const ReportSnapshotsInput = ChildInput.extend({
  takenAt: Instant,
  queries: z.array(ReportQuery),
  analyticsTaskQueue: z.string().min(1),
});
export type ReportSnapshotsInput = z.infer<typeof ReportSnapshotsInput>;

export const ReferenceInput = PagingChildInput.extend({
  /**
   * After a complete snapshot, rows not received since this instant (on the workers' clock, which also
   * stamps `_synced_at`) are marked deleted.
   */
  deletionSince: Instant,
  stream: ReferenceStream,
  pageSize: z.number().int().min(1).max(100),
});
export type ReferenceInput = z.infer<typeof ReferenceInput>;

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

/** Counts a stream or window workflow returns and reports (never rows). */
export const StreamCounts = z.object({
  pages: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  windows: z.number().int().nonnegative(),
  /** HTTP requests sent (retries included), for `_sync_runs.requests`. */
  requests: z.number().int().nonnegative().optional(),
});
export type StreamCounts = z.infer<typeof StreamCounts>;

export const StreamProgress = z.object({
  status: z.enum(['pending', 'running', 'succeeded', 'failed']),
  windowsTotal: z.number().int().nonnegative(),
  windowsDone: z.number().int().nonnegative(),
  pages: z.number().int().nonnegative(),
  rows: z.number().int().nonnegative(),
  /** HTTP requests sent by the stream's windows (retries included); absent in older runs. */
  requests: z.number().int().nonnegative().optional(),
  current: z.string().nullable(),
  error: z.string().nullable(),
});
export type StreamProgress = z.infer<typeof StreamProgress>;

/**
 * What the report API answers within (spec 4.12: the key's agent's channel, team and agent restrictions), as
 * far as the source tells (activities/report-access.ts).
 */
export const ReportAccess = z.object({
  /** True: reports see a restricted part of the workspace; false: all of it; null: not known. */
  restricted: z.boolean().nullable(),
  /** What is known, in words (the restrictions, or why nothing is known). */
  detail: z.string(),
});
export type ReportAccess = z.infer<typeof ReportAccess>;

/** Input of the reconciliation after a run (activities/reconcile.ts). */
export const ReconcileInput = z.object({
  runId: z.string().min(1),
  /** The run's upper bound: the compared days are the `days` complete UTC days before its day. */
  before: Instant,
  days: z.number().int().min(1).max(90),
  /** Compare saved views' counts too (only when the views stream ran in this run). */
  views: z.boolean(),
  /** The report API's scope; restricted: the report comparisons are skipped. Absent: not known. */
  reportAccess: ReportAccess.optional(),
});
export type ReconcileInput = z.infer<typeof ReconcileInput>;

/** What the reconciliation found; mismatches are warnings (spec 2.11 rule 3), never a failed run. */
export const ReconcileSummary = z.object({
  equal: z.number().int().nonnegative(),
  mismatch: z.number().int().nonnegative(),
  skipped: z.number().int().nonnegative(),
  /** Differences the source made while the sync compared (read again after the comparison). */
  moving: z.number().int().nonnegative().optional(),
  /** Differences the warehouse cannot close, each with why (events before its history began …). */
  explained: z.number().int().nonnegative().optional(),
  /** The first few mismatches, one line each. */
  mismatches: z.array(z.string()),
  /** Set when the check itself could not run (recorded as a warning). */
  error: z.string().optional(),
});
export type ReconcileSummary = z.infer<typeof ReconcileSummary>;

/**
 * What the warehouse is known to be missing after a run (activities/missing-data.ts): items set aside in
 * `_rejected` and not stored since, per table, and threads whose last read failed. Any of it makes the run
 * `incomplete`: it never says "succeeded" while data is missing.
 */
export const MissingData = z.object({
  rejected: z.record(z.string(), z.number().int().nonnegative()),
  failedThreads: z.number().int().nonnegative(),
  /** One line: what is missing and how it comes back. Null when nothing is. */
  summary: z.string().nullable(),
});
export type MissingData = z.infer<typeof MissingData>;

/** What `_schema_changes` first saw in a run (activities/schema-drift.ts). */
export const SchemaDriftSummary = z.object({
  /** Changes first seen by this run. */
  recorded: z.number().int().nonnegative(),
  /** The first few, one line each (`new_field tickets.sla_breached_at`). */
  changes: z.array(z.string()),
  /** Field columns of `ticket_custom_fields` when the run regenerated it (it saw a custom field first); else null. */
  customFieldColumns: z.number().int().nonnegative().nullable(),
});
export type SchemaDriftSummary = z.infer<typeof SchemaDriftSummary>;

export const RunProgress = z.object({
  runId: z.string(),
  mode: SyncMode,
  /** `incomplete`: every stream ran, but items were set aside or threads failed (see `missing`). */
  status: z.enum(['running', 'succeeded', 'incomplete', 'failed']),
  missing: MissingData.optional(),
  streams: z.record(z.string(), StreamProgress),
  /** The reconciliation after the streams, when the run synced tickets. */
  reconciliation: ReconcileSummary.optional(),
  /** Schema drift the run saw first (`_schema_changes`). */
  schemaChanges: SchemaDriftSummary.optional(),
  /** The field-level audit after the run (its share of spare budget), when the run had one. */
  audit: AuditSummary.optional(),
});
export type RunProgress = z.infer<typeof RunProgress>;

/** Live counts of one child workflow (its `progress` query). */
export const ChildProgress = z.object({
  pages: z.number(),
  rows: z.number(),
  requests: z.number(),
  detail: z.string().nullable(),
});
export type ChildProgress = z.infer<typeof ChildProgress>;

/**
 * The task queue of a route class: `<queue>-list`, `-detail`, `-analytics`, `-directory`. Activities that
 * make requests of that class run there, and the Temporal server paces each for every worker together.
 */
export function classTaskQueue(taskQueue: string, routeClass: StreamRouteClass) {
  return `${taskQueue}-${routeClass}`;
}

/** `<stream>/<from>/<before>`: the window workflow id on-call searches for. */
export function windowWorkflowId(pass: string, from: string, before: string): string {
  return `${pass}/${from}/${before}`;
}

/**
 * Threads queued per round of the rolling re-read (workflows/threads.ts): enough to keep a few detail
 * requests in flight, few enough that the round in flight when the run's other streams finish ends within a
 * couple of seconds at the spec's 120 a minute. Every run reads one round at least.
 */
export const REVERIFY_ROUND = 4;
