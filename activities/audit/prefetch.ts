import { BoundedMap } from '../../connectors/bounded-map.js';
import { AUDIT_TABLES, type AuditSeed, type AuditTable } from '../../schemas/audit.js';
import type { WarehouseRow } from '../../schemas/warehouse.js';
import type { ActivityDeps } from '../deps.js';
import { idIn, storedRows } from './settle.js';

/*
 * The stored rows the audit's ticket and thread units compare, read by the plan in ONE query per table
 * instead of one per unit: on BigQuery every query bills 10 MB at least per table it names, and a run's audit
 * compares a dozen tickets and threads. Kept in this worker process for the units that run here (a unit on
 * another process reads the warehouse itself), each taken once: a retried unit reads the warehouse.
 *
 * What it changes: a unit compares with the row as stored when the plan read it, not when the unit runs.
 * The audit runs after its run's last flush, so nothing of that run writes the rows meanwhile; a concurrent
 * run that does is the race a unit's own read meets too (read, then the API asked): the judge calls a
 * row the source changed since its last read `changed_since`, not a difference. Entries older than
 * PREFETCH_TTL_MS are not used.
 */

const PREFETCH_TTL_MS = 5 * 60 * 1000;
/** Runs whose prefetched rows are kept (an audit plans once per run). */
const RUNS_KEPT = 8;

interface Prefetched {
  readonly at: number;
  /** Per unit key (ticket id, or thread's ticket number): the stored live rows, by id. */
  readonly rows: Map<string, Map<string, WarehouseRow>>;
}

const prefetched = new BoundedMap<string, Prefetched>(RUNS_KEPT);
const keyOf = (runId: string, table: AuditTable) => `${runId}\u0000${table}`;

/** Reads the stored rows of every seed's unit of `table` in one query, for the units of this process. */
export async function prefetchStored(
  deps: ActivityDeps,
  runId: string,
  table: AuditTable,
  seeds: readonly AuditSeed[],
): Promise<void> {
  const { unit } = AUDIT_TABLES[table];
  if (seeds.length === 0 || unit === 'window') return;
  const at = Date.now();
  const rows = new Map<string, Map<string, WarehouseRow>>();
  if (unit === 'ticket') {
    for (const seed of seeds) rows.set(seed.id, new Map());
    const stored = await storedRows(deps, table, idIn(seeds.map((s) => s.id)));
    for (const [id, row] of stored) rows.get(id)?.set(id, row);
  } else {
    const threads = [...new Set(seeds.flatMap((s) => (s.ticketNumber === null ? [] : [s.ticketNumber])))];
    if (threads.length === 0) return;
    for (const n of threads) rows.set(String(n), new Map());
    const stored = await storedRows(deps, table, { kind: 'in', column: 'ticket_number', values: threads });
    for (const [id, row] of stored) rows.get(String(row['ticket_number']))?.set(id, row);
  }
  prefetched.set(keyOf(runId, table), { at, rows });
}

/** The stored rows the plan read for this unit (taken: a second ask reads the warehouse), or undefined. */
export function takePrefetched(
  runId: string,
  table: AuditTable,
  unitKey: string,
): Map<string, WarehouseRow> | undefined {
  const entry = prefetched.get(keyOf(runId, table));
  if (!entry || Date.now() - entry.at > PREFETCH_TTL_MS) return undefined;
  const rows = entry.rows.get(unitKey);
  entry.rows.delete(unitKey);
  return rows;
}
