import { z } from 'zod';
import { Timestamp } from './api/index.js';
import { STREAM_ROUTE_CLASSES, STREAMS, type StreamName, type StreamRouteClass } from './streams.js';

/** How the field-level audit re-reads a row of the stream's table (schemas/audit.ts). */
export interface AuditUnit {
  /**
   * `ticket`: `GET /tickets/:ticketNumber` of a sampled ticket; `thread`: the first page of a sampled
   * message's thread; `window`: the first page of a narrow export window around a sampled row's date.
   */
  readonly unit: 'ticket' | 'thread' | 'window';
  /** The route class of that one request, when it is not the stream's (a ticket by number is a detail read). */
  readonly routeClass?: StreamRouteClass;
  /** The column a sampled row's unit starts from: its ticket's number, or its date. */
  readonly seedColumn: string;
  /** `window`: the pass whose export the window reads. */
  readonly pass?: string;
  /** Progress entries of a run that must have succeeded for the run to audit the table. */
  readonly streams: readonly string[];
}

/**
 * The field-level audit: which tables it re-reads from the live API and how, what a workflow hands its
 * activities, and what it reports. Data and pure functions only: workflows import it.
 *
 * Each stream declares how its table is audited (streams/<name>.ts `audit`), by one of three units, each
 * ONE request of its route class (so the class's task queue paces it with the rest of the fleet, and the
 * audit's cost is counted in requests per class):
 *  - `ticket`: `GET /tickets/:ticketNumber?include=ticket_fields` of a sampled ticket;
 *  - `thread`: the first page of a sampled message's thread;
 *  - `window`: the first page of a narrow export window (AUDIT_WINDOW_MS) around a sampled row's date.
 */
export const AUDIT_TABLES = Object.fromEntries(
  Object.values(STREAMS).flatMap((s): [string, AuditUnit][] => {
    const unit: AuditUnit | undefined = 'audit' in s ? s.audit : undefined;
    return unit ? [[s.table, { ...unit, routeClass: unit.routeClass ?? s.routeClass }]] : [];
  }),
) as { readonly [T in AuditedTable]: AuditUnitOf<T> };

/** The tables whose stream declares an audit unit (streams/<name>.ts `audit`). */
type AuditedStream = {
  [S in StreamName]: (typeof STREAMS)[S] extends { readonly audit: object } ? S : never;
}[StreamName];
type AuditedTable = (typeof STREAMS)[AuditedStream]['table'];
/** A table's audit unit, with the route class of its one request resolved. */
type AuditUnitOf<T extends AuditedTable> = Extract<(typeof STREAMS)[AuditedStream], { table: T }>['audit'] & {
  readonly routeClass: StreamRouteClass;
};

export const AuditTable = z.enum(Object.keys(AUDIT_TABLES) as [keyof typeof AUDIT_TABLES]);
export type AuditTable = z.infer<typeof AuditTable>;
export const AUDIT_TABLE_NAMES = AuditTable.options;

/** The tables audited by export windows. */
export type WindowTable = {
  [T in AuditTable]: (typeof AUDIT_TABLES)[T]['unit'] extends 'window' ? T : never;
}[AuditTable];

/**
 * Width of the export window read around a sampled survey or session: narrow, so that its one page (up to
 * 100 rows) holds the sampled row and its neighbours, compared whole.
 */
export const AUDIT_WINDOW_MS = 60 * 60 * 1000;

/** Rows an audit unit's page holds at most (the API's largest page). */
export const AUDIT_PAGE_SIZE = 100;

/**
 * Requests per route class: an audit's budget (SYNC_AUDIT_SHARE of each class's limit per rate window) or
 * what it spent.
 */
export const AuditRequests = z.partialRecord(z.enum(STREAM_ROUTE_CLASSES), z.number().int().nonnegative());
export type AuditRequests = z.infer<typeof AuditRequests>;

/** A sampled row: where its unit starts (its ticket's number, or its date for an export window). */
export const AuditSeed = z.object({
  id: z.string().min(1),
  ticketNumber: z.number().int().positive().nullable(),
  at: Timestamp.nullable(),
});
export type AuditSeed = z.infer<typeof AuditSeed>;

/** The audit workflow's input (a run's audit, or `audit --sample N`). */
export const AuditInput = z.object({
  /** Keys the `_audit` rows and seeds the sample (a new sample every run). */
  runId: z.string().min(1),
  tables: z.array(AuditTable).min(1),
  /** Rows to compare per table (`--sample N`); null: as many as the budget buys. */
  rowsPerTable: z.number().int().positive().nullable(),
  /** Requests per class the audit may send; null: no cap (`--sample N` asks for what it costs). */
  requests: AuditRequests.nullable(),
  /** Whether the sync stores CSAT comments (the audit asks the export the same way). */
  includeComments: z.boolean(),
});
export type AuditInput = z.infer<typeof AuditInput>;

/** The plan of one table: how many requests it may spend (null: no cap) and its seeds, in sample order. */
export const AuditTablePlan = z.object({
  table: AuditTable,
  allowance: z.number().int().nonnegative().nullable(),
  seeds: z.array(AuditSeed),
});
export type AuditTablePlan = z.infer<typeof AuditTablePlan>;

/**
 * What one unit compared: rows, and (export windows) the span of seed dates its page covered, so that the
 * workflow skips seeds the page compared already.
 */
export const AuditUnitResult = z.object({
  compared: z.number().int().nonnegative(),
  coveredFrom: Timestamp.nullable(),
  coveredUntil: Timestamp.nullable(),
});
export type AuditUnitResult = z.infer<typeof AuditUnitResult>;

/** Rows compared conclusively (not `changed_since`), those that differed, and the share's bound. */
export const AuditTableResult = z.object({
  sampled: z.number().int().nonnegative(),
  differs: z.number().int().nonnegative(),
  changed_since: z.number().int().nonnegative(),
  healed: z.number().int().nonnegative(),
  share: z.number().min(0).max(1),
  /** One-sided 95 % upper bound on the share of rows that differ (upperBound95). */
  bound: z.number().min(0).max(1),
});
export type AuditTableResult = z.infer<typeof AuditTableResult>;

/** The run summary's `audit` (and `audit --json`): all tables together, then per table. */
export const AuditSummary = AuditTableResult.omit({ share: true }).extend({
  requests: AuditRequests,
  budget: AuditRequests.nullable(),
  tables: z.record(z.string(), AuditTableResult),
  /** Set when the audit itself could not run (a warning: the run is not affected). */
  error: z.string().optional(),
});
export type AuditSummary = z.infer<typeof AuditSummary>;

/** Counts of `_audit` rows of one table by verdict, and how many were healed. */
export interface AuditCounts {
  readonly equal: number;
  readonly differs: number;
  readonly missing_in_warehouse: number;
  readonly missing_in_source: number;
  readonly changed_since: number;
  readonly healed: number;
}

export const NO_AUDIT_COUNTS: AuditCounts = {
  equal: 0,
  differs: 0,
  missing_in_warehouse: 0,
  missing_in_source: 0,
  changed_since: 0,
  healed: 0,
};

export function addCounts(a: AuditCounts, b: Partial<AuditCounts>): AuditCounts {
  const keys = Object.keys(NO_AUDIT_COUNTS) as (keyof AuditCounts)[];
  return Object.fromEntries(keys.map((k) => [k, a[k] + (b[k] ?? 0)])) as unknown as AuditCounts;
}

/**
 * A table's result from its counts: `changed_since` rows are not a sample of the sync's correctness. The
 * share is rounded to 4 decimals, the bound up to 4 (it stays an upper bound).
 */
export function tableResult(c: AuditCounts): AuditTableResult {
  const differs = c.differs + c.missing_in_warehouse + c.missing_in_source;
  const sampled = c.equal + differs;
  return {
    sampled,
    differs,
    changed_since: c.changed_since,
    healed: c.healed,
    share: sampled === 0 ? 0 : Math.round((differs / sampled) * 1e4) / 1e4,
    bound: Math.min(1, Math.ceil(upperBound95(sampled, differs) * 1e4 - 1e-9) / 1e4),
  };
}

/**
 * The one-sided 95 % upper confidence bound on a share when `k` of `n` sampled rows differ: exact
 * (Clopper–Pearson), the p at which seeing `k` or fewer would happen only 5 % of the time,
 * P(X ≤ k | n, p) = 0.05. With k = 0 that is 1 − 0.05^(1/n) ≈ 3/n (the rule of three). Nothing sampled: 1.
 */
export function upperBound95(n: number, k: number): number {
  if (n <= 0 || k >= n) return 1;
  if (k === 0) return 1 - 0.05 ** (1 / n);
  let lo = k / n;
  let hi = 1;
  for (let i = 0; i < 100; i++) {
    const mid = (lo + hi) / 2;
    if (binomialCdf(k, n, mid) > 0.05) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** P(X ≤ k) for X ~ Binomial(n, p), 0 < p < 1, summed in log space (n may be large). */
function binomialCdf(k: number, n: number, p: number): number {
  const logRatio = Math.log(p) - Math.log1p(-p);
  let logTerm = n * Math.log1p(-p);
  let max = logTerm;
  const logs = [logTerm];
  for (let i = 0; i < k; i++) {
    logTerm += Math.log(n - i) - Math.log(i + 1) + logRatio;
    logs.push(logTerm);
    if (logTerm > max) max = logTerm;
  }
  return Math.exp(max) * logs.reduce((sum, l) => sum + Math.exp(l - max), 0);
}

/**
 * Each table's share of its class's budget: the class's requests split evenly between its tables, the
 * remainder going to tables in an order rotated by `rotation` (so that, when a class buys fewer requests
 * than it has tables — analytics at 10 a minute — the tables take turns run by run).
 */
export function splitBudget(
  tables: readonly AuditTable[],
  requests: AuditRequests,
  rotation: number,
): Record<AuditTable, number> {
  const out = {} as Record<AuditTable, number>;
  for (const routeClass of STREAM_ROUTE_CLASSES) {
    const ofClass = tables.filter((t) => AUDIT_TABLES[t].routeClass === routeClass);
    if (ofClass.length === 0) continue;
    const budget = requests[routeClass] ?? 0;
    const each = Math.floor(budget / ofClass.length);
    const extra = budget - each * ofClass.length;
    ofClass.forEach((t, i) => {
      const turn = (i - (rotation % ofClass.length) + ofClass.length) % ofClass.length;
      out[t] = each + (turn < extra ? 1 : 0);
    });
  }
  return out;
}
