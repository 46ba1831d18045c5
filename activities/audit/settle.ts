import type { RowFilter } from '../../connectors/row-filter.js';
import type { AuditTable } from '../../schemas/audit.js';
import {
  type AuditRecord,
  type CheckpointUpdate,
  type RowInputs,
  tableSpecOf,
  type WarehouseRow,
} from '../../schemas/warehouse.js';
import type { ActivityDeps } from '../deps.js';
import { ticketSightings } from '../ticket-sightings.js';
import type { Judged } from './judge.js';
import { renderDifferences } from './render.js';

/** The live rows of `table` a filter selects, every column, by id (as the warehouse holds them). */
export async function storedRows(
  deps: ActivityDeps,
  table: AuditTable,
  filter: RowFilter,
): Promise<Map<string, WarehouseRow>> {
  const spec = tableSpecOf(table);
  const rows = await deps.destination.liveRows(
    table,
    spec.columns.map((c) => c.name),
    filter,
  );
  // `_synced_at` is "last seen in the source" (the judge reads it so) on every destination.
  return new Map(rows.map((row) => [String(row['id']), row as WarehouseRow]));
}

/** Rows whose id is one of `ids`. */
export const idIn = (ids: readonly string[]): RowFilter => ({ kind: 'in', column: 'id', values: ids });

/**
 * Heals what a unit found and records every judged row in `_audit`:
 *  - a row that differs or is missing is rewritten from the API at once (merged by the table's rule as a
 *    repair: at an equal version too, never an older version over a newer one), in one transaction with
 *    `queue` — its thread or export window queued for a re-read, since what
 *    was wrong about one row may be wrong about its neighbours;
 *  - a row the source no longer serves is marked deleted (where the table tracks deletions).
 * Returns how many rows were compared.
 */
export async function settle(
  deps: ActivityDeps,
  input: {
    runId: string;
    table: AuditTable;
    judged: readonly Judged[];
    /** Written with the healed rows, when any row was healed. */
    queue: readonly CheckpointUpdate[];
  },
): Promise<number> {
  const { destination } = deps;
  const { table, judged } = input;
  const writes = judged.flatMap((j) => (j.heal && 'write' in j.heal ? [j.heal.write] : []));
  const gone = judged.flatMap((j) => (j.heal && 'markDeleted' in j.heal ? [j.id] : []));
  const healing = writes.length + gone.length > 0;
  if (writes.length > 0 || (healing && input.queue.length > 0)) {
    const batch = { table, rows: writes as never, checkpoint: input.queue, repair: true };
    // A healed ticket is a change the history must see too (the next sweep finds it unchanged).
    const sightings =
      table === 'tickets' && writes.length > 0
        ? [
            ticketSightings(
              (writes as RowInputs['tickets'][]).map((w) => w.item),
              deps.now?.() ?? new Date(),
              { firstSeen: () => false, repair: true },
            ),
          ]
        : [];
    await destination.writeTables([batch, ...sightings]);
  }
  const now = deps.now?.() ?? new Date();
  if (gone.length > 0) await destination.markDeleted({ table, ids: gone }, now);
  const checkedAt = now.toISOString();
  const records: AuditRecord[] = judged.map((j) => ({
    run_id: input.runId,
    table_name: table,
    row_id: j.id,
    verdict: j.verdict,
    differences: renderDifferences(table, j.differences),
    synced_at: j.syncedAt,
    source_version: j.sourceVersion,
    healed: j.heal !== null,
    checked_at: checkedAt,
  }));
  await destination.bookkeeping.recordAudit(records);
  if (healing)
    deps.logger.info(
      { table, rewritten: writes.length, markedDeleted: gone.length },
      'audit: rows that differed from the source healed',
    );
  return judged.length;
}
