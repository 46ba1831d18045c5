import { z } from 'zod';
import { Instant } from './run-input.js';

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
