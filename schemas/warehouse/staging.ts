import { z } from 'zod';

/*
 * BigQuery's staging (connectors/bigquery/staging.ts): the shapes written to its tables as JSON and read back
 * by a flush, checked on the way back in — a manifest written by another version or damaged is an error
 * naming the batch, not a flush that merges half a batch.
 */

/** What one staged entry of `_staging` is. */
export const StagedOp = z.enum(['row', 'seen', 'checkpoint', 'rejected', 'schema_change', 'run', 'audit']);
export type StagedOp = z.infer<typeof StagedOp>;

/**
 * The manifest of a batch of `_staging` (a row of `_staging_batches`): per op and table the number of
 * entries, its small entries (items set aside, schema changes, ledger entries) with their order, and the
 * ids it saw again unchanged per table (`seen`). Those sightings are folded into the tables' `_synced_at`
 * lazily (connectors/bigquery/sightings.ts), and read from here meanwhile. A manifest without `seen` (an
 * earlier version's) has its sightings folded when its batch is merged.
 */
export const BatchManifest = z.object({
  counts: z.array(z.object({ op: StagedOp, table: z.string().nullable(), n: z.number().int().positive() })),
  entries: z.array(z.object({ op: StagedOp, seq: z.number(), doc: z.string() })),
  seen: z.record(z.string(), z.array(z.string())).optional(),
});
export type BatchManifest = z.infer<typeof BatchManifest>;
