import { createHash } from 'node:crypto';
import {
  AUDIT_TABLES,
  type AuditInput,
  type AuditSummary,
  type AuditTablePlan,
  addCounts,
  NO_AUDIT_COUNTS,
  splitBudget,
  tableResult,
} from '../../schemas/audit.js';
import type { ActivityDeps } from '../deps.js';
import { prefetchStored } from './prefetch.js';

/**
 * Sampled rows read per request a thread or window table may spend: one request compares a whole page, so
 * several seeds may fall on one page (the workflow skips those a page covered) and more are needed.
 */
const SEEDS_PER_REQUEST = 10;

/**
 * The audit's plan, from the warehouse: each table's share of its class's budget, and its seeds — live rows
 * in an order fixed by a hash of their id and the run id (connectors/sql/audit.ts), so the sample is random,
 * new every run, and the same for every worker that asks. Seeds are ids with a ticket number or a date:
 * the rows themselves stay in the warehouse, out of the workflow's history.
 */
export function planAudit(deps: ActivityDeps) {
  return async (
    input: Pick<AuditInput, 'runId' | 'tables' | 'rowsPerTable' | 'requests'>,
  ): Promise<{ tables: AuditTablePlan[] }> => {
    const rotation = Number.parseInt(createHash('sha256').update(input.runId).digest('hex').slice(0, 8), 16);
    const split = input.requests ? splitBudget(input.tables, input.requests, rotation) : null;
    const tables: AuditTablePlan[] = [];
    for (const table of input.tables) {
      const allowance = split ? split[table] : null;
      const { unit, seedColumn } = AUDIT_TABLES[table];
      const wanted = input.rowsPerTable ?? (allowance ?? 0) * (unit === 'ticket' ? 1 : SEEDS_PER_REQUEST);
      if (wanted === 0 || allowance === 0) {
        tables.push({ table, allowance, seeds: [] });
        continue;
      }
      const sampled = await deps.destination.bookkeeping.auditSample(table, seedColumn, input.runId, wanted);
      // Messages are sampled, threads read: one thread per ticket, in the order its first message came.
      const threads = new Set<number | null>();
      const seeds =
        unit === 'thread'
          ? sampled
              .filter((s) => !threads.has(s.ticketNumber) && threads.add(s.ticketNumber))
              .slice(0, allowance ?? undefined)
          : sampled;
      await prefetchStored(deps, input.runId, table, seeds);
      tables.push({ table, allowance, seeds });
    }
    return { tables };
  };
}

/**
 * The audit's result, read back from `_audit` (one row per compared row, whatever retries happened): per
 * table the rows compared, the share that differed and its 95 % upper bound, and all tables together.
 */
export function finishAudit(deps: ActivityDeps) {
  return async (input: {
    runId: string;
    /** What kept units from running (a warning; the rest of the audit stands). */
    errors: string[];
  }): Promise<Omit<AuditSummary, 'requests' | 'budget'>> => {
    const counts = await deps.destination.bookkeeping.auditCounts({ runId: input.runId });
    const tables = Object.fromEntries(Object.entries(counts).map(([t, c]) => [t, tableResult(c)]));
    const { share: _share, ...total } = tableResult(Object.values(counts).reduce(addCounts, NO_AUDIT_COUNTS));
    return { ...total, tables, ...(input.errors.length > 0 ? { error: input.errors.join('; ') } : {}) };
  };
}
