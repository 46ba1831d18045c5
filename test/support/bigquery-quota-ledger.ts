/**
 * The quota proxy's accounting: what BigQuery's per-table limits bound, counted from the jobs and table
 * operations a client submits, with the rules a new job would break (bigquery-quota-proxy.ts is the HTTP
 * around it). Limits (cloud.google.com/bigquery/quotas, docs/data-manipulation-language):
 *
 * - mutating DML (UPDATE, DELETE, MERGE, TRUNCATE): at most 2 running per table (more queue, up to 20; the
 *   rest fail);
 * - DML statements (INSERT included): at most 25 per table per 10 seconds;
 * - load jobs: 1,500 per table per day (reported per run and table; a caller scales it by the schedule);
 * - multi-statement transactions: two that modify the same table at once conflict and the later aborts;
 * - table metadata updates (tables.insert/patch/update/delete, DDL, a load job's output): at most 5 per
 *   table per 10 seconds;
 * - billing: every query bills at least 10 MB (bigquery-billing.ts estimates the bill from table sizes).
 *
 * Statements inside `IF … END IF` run only when their condition holds, which the request does not tell:
 * they are counted apart (`conditionalDml`) and left out of the rules and peaks. Per-table figures are
 * kept per table group: the per-batch staging tables of one target (`_stage_tickets_<hex>`) are one row,
 * `_stage_tickets*`, while the rules apply to each table itself.
 */
import { billStatement, MINIMUM_BILLED_BYTES } from './bigquery-billing.js';
import { type JobShape, MUTATING } from './bigquery-job-shapes.js';

export const BIGQUERY_LIMITS = {
  concurrentMutatingDmlPerTable: 2,
  dmlPerTablePer10s: 25,
  loadJobsPerTablePerDay: 1500,
  tableMetadataUpdatesPerTablePer10s: 5,
  minimumBilledBytesPerQuery: MINIMUM_BILLED_BYTES,
  /** "Maximum query length: 1,024k characters, including comments and white space" (a script is one query). */
  maxQueryLength: 1024 * 1024,
} as const;

export type QuotaRule =
  | 'concurrent-mutating-dml'
  | 'dml-rate'
  | 'transaction-conflict'
  | 'table-metadata-rate'
  | 'query-length'
  /** A job's location does not hold a dataset it references (bigquery-locations.ts). */
  | 'location';

export interface QuotaViolation {
  readonly rule: QuotaRule;
  readonly table: string;
  readonly at: number;
  readonly detail: string;
}

export interface TableQuotaFigures {
  /** Jobs that write the table (DML, or a load into it). */
  jobs: number;
  /** Query jobs that only read it. */
  readJobs: number;
  dmlStatements: number;
  mutatingDml: number;
  /** DML inside IF … END IF (may not have run); not in the other DML figures. */
  conditionalDml: number;
  loadJobs: number;
  /**
   * Load jobs into the one table of the group that got the most (a batch staging table gets one): the
   * figure the 1,500 per table per day bounds, once scaled to a day.
   */
  peakLoadJobsPerTable: number;
  /** tables.insert/patch/update/delete, DDL statements and load jobs on the table. */
  tableOps: number;
  /** `tabledata.insertAll` requests (streaming inserts). */
  streamingInserts: number;
  /** `tabledata.list` requests (table reads, a page each): no job, no bytes billed. */
  tableReads: number;
  peakDmlPer10s: number;
  peakConcurrentMutatingDml: number;
  peakConcurrentTransactions: number;
  peakTableOpsPer10s: number;
  /** Estimated bytes billed (bigquery-billing.ts), this table's share. */
  billedBytes: number;
}

export interface QuotaReport {
  readonly queryJobs: number;
  readonly loadJobs: number;
  /** Queries × the 10 MB floor: what BigQuery bills at the least, one bill per query job. */
  readonly billedBytesFloor: number;
  /** Each statement (a script's child job) billed as BigQuery would, from the tables' sizes. */
  readonly billedBytesEstimate: number;
  /** Statements billed (child jobs of scripts, single queries). */
  readonly billedStatements: number;
  readonly tables: Readonly<Record<string, TableQuotaFigures>>;
  readonly violations: readonly QuotaViolation[];
  /** Requests per route (`POST /projects/*\/jobs`…), to see what the client sends. */
  readonly requests: Readonly<Record<string, number>>;
}

/** A table's report row: batch staging tables `_stage_<target>_<hex>` are grouped as `_stage_<target>*`. */
export function tableGroupOf(table: string): string {
  const stage = /^(_stage_.+)_[0-9a-f]{8,}$/.exec(table);
  return stage ? `${stage[1]}*` : table;
}

interface RunningJob {
  readonly id: string;
  readonly shape: JobShape;
}

const unconditional = (shape: JobShape) => shape.statements.filter((s) => !s.conditional);
const mutatedTables = (shape: JobShape) =>
  new Set(
    unconditional(shape)
      .filter((s) => MUTATING.has(s.kind))
      .map((s) => s.table),
  );
const writtenTables = (shape: JobShape) => new Set(unconditional(shape).map((s) => s.table));

/**
 * Counts jobs, table operations and requests, and says which rules a job would break given what runs.
 * `tableBytes` gives a table's logical size for the bill (undefined: not known); tables created through
 * the ledger (`tableOp` create) and loaded staging tables are known to it anyway.
 */
export class QuotaLedger {
  readonly #running = new Map<string, RunningJob>();
  /** Tables seen created or loaded, with the bytes loaded into those the ledger sized itself. */
  readonly #known = new Map<string, number | undefined>();
  #figures: Record<string, TableQuotaFigures> = {};
  #dmlTimes: Record<string, number[]> = {};
  #loadsPerTable: Record<string, number> = {};
  #opTimes: Record<string, number[]> = {};
  #violations: QuotaViolation[] = [];
  #requests: Record<string, number> = {};
  #queryJobs = 0;
  #loadJobs = 0;
  #billed = 0;
  #billedStatements = 0;

  constructor(private readonly tableBytes: (table: string) => number | undefined = () => undefined) {}

  /** The size the bill uses: the caller's figure, or what was loaded into a staging table, or unknown. */
  sizeOf = (table: string): number | undefined => {
    const given = this.tableBytes(table);
    if (given !== undefined) return given;
    return this.#known.has(table) ? (this.#known.get(table) ?? 0) : undefined;
  };

  #table(table: string): TableQuotaFigures {
    const group = tableGroupOf(table);
    this.#figures[group] ??= {
      jobs: 0,
      readJobs: 0,
      dmlStatements: 0,
      mutatingDml: 0,
      conditionalDml: 0,
      loadJobs: 0,
      peakLoadJobsPerTable: 0,
      tableOps: 0,
      streamingInserts: 0,
      tableReads: 0,
      peakDmlPer10s: 0,
      peakConcurrentMutatingDml: 0,
      peakConcurrentTransactions: 0,
      peakTableOpsPer10s: 0,
      billedBytes: 0,
    };
    return this.#figures[group]!;
  }

  /** Times within the last 10 s of `at` for `table`, with `at` added `n` times. */
  #window(times: Record<string, number[]>, table: string, at: number, n = 1): number[] {
    times[table] ??= [];
    const list = times[table]!;
    for (let i = 0; i < n; i++) list.push(at);
    while (list.length > 0 && list[0]! <= at - 10_000) list.shift();
    return list;
  }

  countRequest(route: string): void {
    this.#requests[route] = (this.#requests[route] ?? 0) + 1;
  }

  /** The rules a new job would break given what runs now; [] when it may start. */
  check(shape: JobShape, at: number): QuotaViolation[] {
    const found: QuotaViolation[] = [];
    if ((shape.queryLength ?? 0) > BIGQUERY_LIMITS.maxQueryLength)
      found.push({
        rule: 'query-length',
        table: '(query)',
        at,
        detail: `a query of ${shape.queryLength} characters (BigQuery takes ${BIGQUERY_LIMITS.maxQueryLength} at most)`,
      });
    const running = [...this.#running.values()];
    for (const table of mutatedTables(shape)) {
      const concurrent = running.filter((j) => mutatedTables(j.shape).has(table)).length + 1;
      if (concurrent > BIGQUERY_LIMITS.concurrentMutatingDmlPerTable)
        found.push({
          rule: 'concurrent-mutating-dml',
          table,
          at,
          detail: `${concurrent} mutating DML jobs running on ${table} (BigQuery runs ${BIGQUERY_LIMITS.concurrentMutatingDmlPerTable})`,
        });
    }
    for (const table of writtenTables(shape)) {
      const conflicting = running.find(
        (j) => (j.shape.transaction || shape.transaction) && writtenTables(j.shape).has(table),
      );
      if (conflicting)
        found.push({
          rule: 'transaction-conflict',
          table,
          at,
          detail: `a transaction modifies ${table} while job ${conflicting.id} does: BigQuery aborts the later one`,
        });
      const recent = (this.#dmlTimes[table] ?? []).filter((t) => t > at - 10_000).length;
      const here = unconditional(shape).filter((s) => s.table === table).length;
      if (recent + here > BIGQUERY_LIMITS.dmlPerTablePer10s)
        found.push({
          rule: 'dml-rate',
          table,
          at,
          detail: `${recent + here} DML statements on ${table} within 10 s (BigQuery allows ${BIGQUERY_LIMITS.dmlPerTablePer10s})`,
        });
    }
    for (const table of new Set(shape.ddl.map((d) => d.table)))
      found.push(...this.checkTableOp(table, at, shape.ddl.filter((d) => d.table === table).length));
    return found;
  }

  /** The metadata-rate rule for `n` more operations on `table` at `at`. */
  checkTableOp(table: string, at: number, n = 1): QuotaViolation[] {
    const recent = (this.#opTimes[table] ?? []).filter((t) => t > at - 10_000).length;
    if (recent + n <= BIGQUERY_LIMITS.tableMetadataUpdatesPerTablePer10s) return [];
    return [
      {
        rule: 'table-metadata-rate',
        table,
        at,
        detail: `${recent + n} metadata updates of ${table} within 10 s (BigQuery allows ${BIGQUERY_LIMITS.tableMetadataUpdatesPerTablePer10s})`,
      },
    ];
  }

  violate(found: readonly QuotaViolation[]): void {
    this.#violations.push(...found);
  }

  /** A table operation outside a job: tables.insert (`create`) / patch / update / delete. */
  tableOp(table: string, at: number, kind: 'create' | 'alter' | 'drop'): void {
    if (kind === 'create' && !this.#known.has(table)) this.#known.set(table, undefined);
    const f = this.#table(table);
    f.tableOps++;
    const n = this.#window(this.#opTimes, table, at).length;
    f.peakTableOpsPer10s = Math.max(f.peakTableOpsPer10s, n);
  }

  /** A `tabledata.insertAll` request. */
  streamingInsert(table: string): void {
    this.#table(table).streamingInserts++;
  }

  /** A `tabledata.list` request (a table read: billed nothing). */
  tableRead(table: string): void {
    this.#table(table).tableReads++;
  }

  /** A job the client submitted (it runs until `done`); `loadedBytes`: a load job's rows, sized. */
  record(id: string, shape: JobShape, at: number, loadedBytes?: number): void {
    if (shape.kind === 'load' && shape.loadTable) {
      this.#loadJobs++;
      const f = this.#table(shape.loadTable);
      f.jobs++;
      f.loadJobs++;
      const loads = (this.#loadsPerTable[shape.loadTable] ?? 0) + 1;
      this.#loadsPerTable[shape.loadTable] = loads;
      f.peakLoadJobsPerTable = Math.max(f.peakLoadJobsPerTable, loads);
      this.tableOp(shape.loadTable, at, 'create');
      if (loadedBytes !== undefined)
        this.#known.set(shape.loadTable, (this.#known.get(shape.loadTable) ?? 0) + loadedBytes);
      return;
    }
    if (shape.kind === 'query') this.#queryJobs++;
    for (const d of shape.ddl) this.tableOp(d.table, at, d.kind);
    this.#bill(shape);
    const written = writtenTables(shape);
    for (const table of written) this.#table(table).jobs++;
    const read = new Set(shape.children.flatMap((c) => c.reads).filter((t) => this.sizeOf(t) !== undefined));
    for (const table of read) if (!written.has(table)) this.#table(table).readJobs++;
    for (const s of shape.statements) {
      const f = this.#table(s.table);
      if (s.conditional) {
        f.conditionalDml++;
        continue;
      }
      f.dmlStatements++;
      if (MUTATING.has(s.kind)) f.mutatingDml++;
      f.peakDmlPer10s = Math.max(f.peakDmlPer10s, this.#window(this.#dmlTimes, s.table, at).length);
    }
    this.#running.set(id, { id, shape });
    const running = [...this.#running.values()];
    for (const table of mutatedTables(shape)) {
      const n = running.filter((j) => mutatedTables(j.shape).has(table)).length;
      const f = this.#table(table);
      f.peakConcurrentMutatingDml = Math.max(f.peakConcurrentMutatingDml, n);
    }
    if (shape.transaction)
      for (const table of written) {
        const n = running.filter((j) => j.shape.transaction && writtenTables(j.shape).has(table)).length;
        const f = this.#table(table);
        f.peakConcurrentTransactions = Math.max(f.peakConcurrentTransactions, n);
      }
  }

  #bill(shape: JobShape): void {
    for (const child of shape.children) {
      // A conditional statement's bill is left out like its DML: the request does not say it ran.
      if (child.conditional) continue;
      const bill = billStatement(child, this.sizeOf);
      if (bill.bytes === 0) continue;
      this.#billed += bill.bytes;
      this.#billedStatements++;
      const shares = [...bill.byTable.values()].reduce((a, b) => a + b, 0);
      // The floor may lift the bill above its shares: each table keeps its proportion of the whole.
      for (const [table, share] of bill.byTable)
        this.#table(table).billedBytes += shares === 0 ? 0 : (bill.bytes * share) / shares;
    }
  }

  /** Re-keys a running job under the id the service gave it. */
  rename(from: string, to: string): void {
    const entry = this.#running.get(from);
    if (!entry || from === to) return;
    this.#running.delete(from);
    this.#running.set(to, { ...entry, id: to });
  }

  done(id: string): void {
    this.#running.delete(id);
  }

  report(): QuotaReport {
    return {
      queryJobs: this.#queryJobs,
      loadJobs: this.#loadJobs,
      billedBytesFloor: this.#queryJobs * MINIMUM_BILLED_BYTES,
      billedBytesEstimate: this.#billed,
      billedStatements: this.#billedStatements,
      tables: structuredClone(this.#figures),
      violations: [...this.#violations],
      requests: { ...this.#requests },
    };
  }

  /** Forgets the counts (between phases); the tables it knows and the jobs still running stay. */
  reset(): void {
    this.#figures = {};
    this.#dmlTimes = {};
    this.#loadsPerTable = {};
    this.#opTimes = {};
    this.#violations = [];
    this.#requests = {};
    this.#queryJobs = 0;
    this.#loadJobs = 0;
    this.#billed = 0;
    this.#billedStatements = 0;
  }
}
