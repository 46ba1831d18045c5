import { log } from '@temporalio/workflow';
import {
  AUDIT_TABLES,
  AUDIT_WINDOW_MS,
  type AuditInput,
  type AuditRequests,
  type AuditSeed,
  type AuditSummary,
  type AuditTablePlan,
  type AuditUnitResult,
  type WindowTable,
} from '../schemas/audit.js';
import { auditActivities, bookkeeping } from './activity-proxies.js';
import { allSettledWithLimit } from './concurrency.js';
import { innermostMessage } from './failures.js';

/**
 * The field-level audit: re-reads a random sample of stored rows from the live API, compares
 * every stored field, heals what differs and records every verdict in `_audit` (activities/audit/). The
 * sample is chosen by an activity from the warehouse; this workflow only walks it — each table one unit
 * after the other, the tables at once — within each table's share of the request budget (or until it has
 * compared `rowsPerTable` rows), and reports what `_audit` holds for the run.
 */
export async function auditWorkflow(input: AuditInput): Promise<AuditSummary> {
  const { tables } = await bookkeeping.planAudit({
    runId: input.runId,
    tables: input.tables,
    rowsPerTable: input.rowsPerTable,
    requests: input.requests,
  });
  const spent: AuditRequests = {};
  const errors: string[] = [];
  const audits = tables.map((plan) => () => auditTable(input, plan, spent, errors));
  // Two tables at once: each unit writes `_audit` (and heals by a merge), and BigQuery runs at most 2
  // mutating DML statements per table.
  await allSettledWithLimit(audits, AUDIT_TABLES_AT_ONCE);
  const { requests: _bookkeeping, ...result } = await bookkeeping.finishAudit({
    runId: input.runId,
    errors,
  });
  return { ...result, requests: spent, budget: input.requests };
}

/** Tables audited at once (see auditWorkflow). */
const AUDIT_TABLES_AT_ONCE = 2;

/** One table's units, in sample order, skipping seeds a unit's page already covered. */
async function auditTable(
  input: AuditInput,
  plan: AuditTablePlan,
  spent: AuditRequests,
  errors: string[],
): Promise<void> {
  const { routeClass } = AUDIT_TABLES[plan.table];
  let requests = 0;
  let compared = 0;
  const covered: { from: number; until: number }[] = [];
  for (const seed of plan.seeds) {
    if (plan.allowance !== null && requests >= plan.allowance) break;
    if (input.rowsPerTable !== null && compared >= input.rowsPerTable) break;
    const at = seed.at === null ? null : Date.parse(seed.at);
    if (at !== null && covered.some((c) => at >= c.from && at < c.until)) continue;
    try {
      const result = await unit(input, plan.table, seed);
      requests += result.requests;
      compared += result.compared;
      if (result.coveredFrom !== null && result.coveredUntil !== null)
        covered.push({ from: Date.parse(result.coveredFrom), until: Date.parse(result.coveredUntil) });
    } catch (err) {
      // A unit that fails its few attempts stops its table: the rest of the audit stands, and a source
      // that refuses (a missing scope, an outage) does not have the whole allowance spent on failures.
      requests += 1;
      errors.push(`${plan.table}: ${innermostMessage(err)}`);
      log.warn('audit unit failed (the run is not affected)', { table: plan.table, error: errors.at(-1) });
      break;
    }
  }
  spent[routeClass] = (spent[routeClass] ?? 0) + requests;
}

/** The unit of a table's kind (schemas/audit.ts), on its class's task queue. */
function unit(
  input: AuditInput,
  table: AuditTablePlan['table'],
  seed: AuditSeed,
): Promise<AuditUnitResult & { requests: number }> {
  const { runId } = input;
  const config = AUDIT_TABLES[table];
  const activities = auditActivities(config.routeClass);
  switch (config.unit) {
    case 'ticket':
      return activities.auditTicket({ runId, seed });
    case 'thread':
      return activities.auditThread({ runId, seed });
    case 'window': {
      if (seed.at === null) throw new Error(`audit seed ${seed.id} of ${table} has no date`);
      const at = Date.parse(seed.at);
      return activities.auditWindow({
        runId,
        table: table as WindowTable,
        from: new Date(at - AUDIT_WINDOW_MS / 2).toISOString(),
        before: new Date(at + AUDIT_WINDOW_MS / 2).toISOString(),
        includeComments: input.includeComments,
      });
    }
  }
}
