import type { SqlReader } from '../destination.js';

/* Reads of the run ledger (`_sync_runs`) beyond its listing (RunLedger.listRuns). */

/** Of these window workflow ids, those with a succeeded attempt. */
export async function succeededWorkflowIds(
  reader: SqlReader,
  workflowIds: readonly string[],
): Promise<string[]> {
  if (workflowIds.length === 0) return [];
  const rows = await reader.select(
    (d) =>
      `SELECT DISTINCT ${d.ident('workflow_id')} AS workflow_id FROM ${d.table('_sync_runs')} ` +
      `WHERE ${d.ident('status')} = ${d.string('succeeded')} AND ${d.ident('workflow_id')} IN (${workflowIds.map((id) => d.string(id)).join(', ')})`,
  );
  return rows.map((r) => String(r['workflow_id']));
}

/**
 * Per stream of `streams`, the newest end of a succeeded window of a run that reads up to its start
 * (incremental or full refresh; a backfill or a replay re-reads the past): when it was last read completely.
 * Streams never read so are left out.
 */
export async function lastCompleteReads(
  reader: SqlReader,
  streams: readonly string[],
): Promise<{ stream: string; lastRead: unknown }[]> {
  const rows = await reader.select(
    (d) =>
      `SELECT ${d.ident('stream')} AS stream, MAX(${d.ident('finished_at')}) AS last_read FROM ${d.table('_sync_runs')} ` +
      `WHERE ${d.ident('parent_run_id')} IS NOT NULL AND ${d.ident('status')} = ${d.string('succeeded')} ` +
      `AND ${d.ident('mode')} IN (${d.string('incremental')}, ${d.string('full_refresh')}) ` +
      `AND ${d.ident('stream')} IN (${streams.map((s) => d.string(s)).join(', ')}) GROUP BY ${d.ident('stream')}`,
  );
  return rows.map((r) => ({ stream: String(r['stream']), lastRead: r['last_read'] }));
}
