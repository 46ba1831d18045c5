import { z } from 'zod';
import { AuditSummary } from './audit.js';
import { ReconcileSummary } from './reconcile.js';
import { SyncMode } from './run-input.js';

// What a run reports: its streams' counts and progress, what the warehouse is missing, its summary.

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
