import { liveRowCount } from '../connectors/queries/row-counts.js';
import { AUDIT_TABLE_NAMES, AUDIT_TABLES, type AuditTable, splitBudget } from '../schemas/audit.js';
import type { Config } from '../schemas/config.js';
import type { ForecastItem } from '../schemas/forecast.js';
import type { SyncMode } from '../schemas/run-input.js';
import type { StreamName } from '../schemas/streams.js';
import { auditRequestsOf } from '../worker/config.js';
import type { ForecastReads } from './warehouse-reads.js';

/**
 * The audit a run ends with (workflows/run/audit.ts): only incremental runs and full refreshes, of the
 * audited tables the run syncs, each table its share of SYNC_AUDIT_SHARE's budget (splitBudget) — one
 * request per sampled ticket, thread or export window — but no more units than the table will hold rows
 * after the run (a small workspace runs out of rows before the budget does).
 */
export async function forecastAudit(options: {
  config: Config;
  mode: SyncMode;
  streams: readonly StreamName[];
  reads: ForecastReads;
  /** Rows this run is expected to bring, per audited table (the larger of this and the stored count counts). */
  expectedRows: Partial<Record<AuditTable, number>>;
}): Promise<ForecastItem[]> {
  const budget = auditRequestsOf(options.config);
  if (!budget || (options.mode !== 'incremental' && options.mode !== 'full_refresh')) return [];
  // Each audited table is a stream of the same name.
  const tables = AUDIT_TABLE_NAMES.filter((t) => options.streams.includes(t));
  if (tables.length === 0) return [];
  const split = splitBudget(tables, budget, 0);
  const items: ForecastItem[] = [];
  for (const table of tables) {
    const { unit } = AUDIT_TABLES[table];
    // A thread is read per ticket: the units of the threads stream's table are the tickets.
    const stored = await liveRows(options.reads, unit === 'thread' ? 'tickets' : table);
    const units = Math.max(stored, options.expectedRows[unit === 'thread' ? 'tickets' : table] ?? 0);
    const requests = Math.min(split[table], units);
    if (requests === 0) continue;
    items.push({
      source: 'audit',
      route_class: AUDIT_TABLES[table].routeClass,
      what: `audit: ${requests} ${AUDIT_TABLES[table].unit}(s) of ${table} re-read`,
      requests,
      at_least: 0,
      basis: `SYNC_AUDIT_SHARE ${options.config.SYNC_AUDIT_SHARE} of the class's limit, split between its tables; after a run whose ${table} succeeded`,
    });
  }
  return items;
}

async function liveRows(reads: ForecastReads, table: AuditTable): Promise<number> {
  return (await liveRowCount(reads, [table])) ?? 0;
}
