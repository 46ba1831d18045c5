/**
 * BigQuery's documented per-table limits, kept in front of the emulator.
 *
 * bqemulator (DuckDB) runs any number of MERGEs and transactions on one table at once; the real service does
 * not. This HTTP proxy sits between a BigQuery client and the emulator, reads every job the client submits
 * (the REST API's `jobs.insert`, multipart uploads of load jobs, `jobs.query`) and counts, per table, what
 * BigQuery's quota and DML pages bound (cloud.google.com/bigquery/quotas, docs/data-manipulation-language):
 *
 * - mutating DML (UPDATE, DELETE, MERGE, TRUNCATE): at most 2 running per table (more queue, up to 20; the
 *   rest fail);
 * - DML statements (INSERT included): at most 25 per table per 10 seconds;
 * - load jobs: 1,500 per table per day (reported per run; a caller scales it by the schedule);
 * - multi-statement transactions: two that modify the same table at once conflict and the later aborts;
 * - billing: every query bills at least 10 MB.
 *
 * A job counts as running from its insert until the client first sees it done (`jobs.get` state DONE or
 * `jobs.getQueryResults` jobComplete) — an upper bound of the server's own running time, so the check errs
 * strict. With `enforce`, a job that would break the concurrency or transaction rules is refused the way
 * BigQuery fails it (HTTP 400, reason `invalidQuery` / `quotaExceeded`), so a destination that does not keep
 * the rules fails its test; without, the proxy only records (for benches).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export const BIGQUERY_LIMITS = {
  concurrentMutatingDmlPerTable: 2,
  dmlPerTablePer10s: 25,
  loadJobsPerTablePerDay: 1500,
  minimumBilledBytesPerQuery: 10 * 1024 * 1024,
} as const;

export type StatementKind = 'merge' | 'update' | 'delete' | 'truncate' | 'insert';
const MUTATING: ReadonlySet<StatementKind> = new Set(['merge', 'update', 'delete', 'truncate']);

/** What one submitted job does to which tables. */
export interface JobShape {
  readonly kind: 'query' | 'load' | 'other';
  /** DML statements, in order, with the table each one writes. */
  readonly statements: readonly { kind: StatementKind; table: string }[];
  /** A `BEGIN TRANSACTION` script. */
  readonly transaction: boolean;
  /** Load jobs: the destination table. */
  readonly loadTable?: string;
}

export interface QuotaViolation {
  readonly rule: 'concurrent-mutating-dml' | 'dml-rate' | 'transaction-conflict' | 'load-jobs-per-day';
  readonly table: string;
  readonly at: number;
  readonly detail: string;
}

export interface TableQuotaFigures {
  jobs: number;
  dmlStatements: number;
  mutatingDml: number;
  loadJobs: number;
  peakDmlPer10s: number;
  peakConcurrentMutatingDml: number;
  peakConcurrentTransactions: number;
}

export interface QuotaReport {
  readonly queryJobs: number;
  readonly loadJobs: number;
  /** Queries × the 10 MB floor: what BigQuery bills at the least for this run's queries. */
  readonly billedBytesFloor: number;
  readonly tables: Readonly<Record<string, TableQuotaFigures>>;
  readonly violations: readonly QuotaViolation[];
}

export interface BigQueryQuotaProxy {
  /** Endpoint to give the client (`apiEndpoint`) instead of the emulator's. */
  readonly endpoint: string;
  report(): QuotaReport;
  /** Forget what was counted so far (between phases of a test). */
  reset(): void;
  stop(): Promise<void>;
}

/** The last segment of a (possibly backquoted, dotted) table path: `ds`.`t` / `p.ds.t` → t. */
function tableOf(path: string): string {
  const parts = path
    .replace(/`/g, '')
    .split('.')
    .filter((p) => p.length > 0);
  return parts[parts.length - 1] ?? path;
}

/** Removes comments and string literals, so their text cannot look like statements. */
function stripSql(sql: string): string {
  return sql
    .replace(/--[^\n]*/g, ' ')
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/'(?:\\.|[^'\\])*'/g, "''")
    .replace(/"(?:\\.|[^"\\])*"/g, '""');
}

const STATEMENT =
  /\b(MERGE|UPDATE|DELETE|TRUNCATE|INSERT)\s+(?:INTO\s+|FROM\s+|TABLE\s+)?(`[^`]+`(?:\.`[^`]+`)*|[\w.-]+)/gi;

/** The DML statements of a query or script, in order. A subquery's SELECT is not a statement. */
export function shapeOfQuery(sql: string): JobShape {
  const text = stripSql(sql);
  const statements: { kind: StatementKind; table: string }[] = [];
  for (const m of text.matchAll(STATEMENT)) {
    const kind = m[1]!.toLowerCase() as StatementKind;
    // `MERGE … WHEN NOT MATCHED THEN INSERT (…)` and `WHEN MATCHED THEN UPDATE SET`/`DELETE` are clauses of
    // the MERGE, not statements: they have no table after them.
    const target = m[2]!;
    if (/^(SET|ROW|VALUES|\()/i.test(target) || target.startsWith('(')) continue;
    const before = text.slice(Math.max(0, m.index - 12), m.index);
    if (/THEN\s+$/i.test(before)) continue;
    statements.push({ kind, table: tableOf(target) });
  }
  return { kind: 'query', statements, transaction: /\bBEGIN\s+TRANSACTION\b/i.test(text) };
}

interface JobConfiguration {
  query?: { query?: string };
  load?: { destinationTable?: { tableId?: string } };
}
interface JobResource {
  jobReference?: { jobId?: string };
  configuration?: JobConfiguration;
}

/** The job resource inside a `jobs.insert` body (JSON, or the first part of a multipart upload). */
function jobResourceOf(body: string, contentType: string): JobResource | undefined {
  try {
    if (contentType.startsWith('multipart/')) {
      const start = body.indexOf('{');
      if (start < 0) return undefined;
      // The metadata part is one JSON object; find its end by balancing braces outside strings.
      let depth = 0;
      let inString = false;
      for (let i = start; i < body.length; i++) {
        const c = body[i];
        if (inString) {
          if (c === '\\') i++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === '{') depth++;
        else if (c === '}' && --depth === 0) return JSON.parse(body.slice(start, i + 1)) as JobResource;
      }
      return undefined;
    }
    return JSON.parse(body) as JobResource;
  } catch {
    return undefined;
  }
}

export function shapeOfJob(configuration: JobConfiguration | undefined): JobShape {
  if (configuration?.query?.query) return shapeOfQuery(configuration.query.query);
  const loadTable = configuration?.load?.destinationTable?.tableId;
  if (loadTable) return { kind: 'load', statements: [], transaction: false, loadTable };
  return { kind: 'other', statements: [], transaction: false };
}

interface RunningJob {
  readonly id: string;
  readonly shape: JobShape;
  readonly started: number;
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function refuse(res: ServerResponse, reason: string, message: string): void {
  res.writeHead(400, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      error: { code: 400, message, errors: [{ reason, message }], status: 'INVALID_ARGUMENT' },
    }),
  );
}

/** Starts the proxy on a free loopback port in front of `target` (the emulator's endpoint). */
export async function startBigQueryQuotaProxy(
  target: string,
  options: {
    enforce?: boolean;
    now?: () => number;
    /**
     * The emulator finishes most jobs within the insert request; BigQuery takes a second or more. A job's
     * insert is answered no sooner than this after it arrived, so jobs a client runs at once overlap here as
     * they would on the service.
     */
    minJobMs?: number;
  } = {},
): Promise<BigQueryQuotaProxy> {
  const now = options.now ?? Date.now;
  const minJobMs = options.minJobMs ?? 0;
  const enforce = options.enforce ?? true;
  const running = new Map<string, RunningJob>();
  let figures: Record<string, TableQuotaFigures> = {};
  let dmlTimes: Record<string, number[]> = {};
  let violations: QuotaViolation[] = [];
  let queryJobs = 0;
  let loadJobs = 0;

  const tableFigures = (table: string): TableQuotaFigures => {
    figures[table] ??= {
      jobs: 0,
      dmlStatements: 0,
      mutatingDml: 0,
      loadJobs: 0,
      peakDmlPer10s: 0,
      peakConcurrentMutatingDml: 0,
      peakConcurrentTransactions: 0,
    };
    return figures[table]!;
  };
  const mutatedTables = (shape: JobShape) =>
    new Set(shape.statements.filter((s) => MUTATING.has(s.kind)).map((s) => s.table));
  const writtenTables = (shape: JobShape) => new Set(shape.statements.map((s) => s.table));

  /** The rules a new job would break given what runs now; [] when it may start. */
  function check(shape: JobShape, at: number): QuotaViolation[] {
    const found: QuotaViolation[] = [];
    for (const table of mutatedTables(shape)) {
      const concurrent = [...running.values()].filter((j) => mutatedTables(j.shape).has(table)).length + 1;
      if (concurrent > BIGQUERY_LIMITS.concurrentMutatingDmlPerTable)
        found.push({
          rule: 'concurrent-mutating-dml',
          table,
          at,
          detail: `${concurrent} mutating DML jobs running on ${table} (BigQuery runs ${BIGQUERY_LIMITS.concurrentMutatingDmlPerTable})`,
        });
    }
    for (const table of writtenTables(shape)) {
      const conflicting = [...running.values()].find(
        (j) => (j.shape.transaction || shape.transaction) && writtenTables(j.shape).has(table),
      );
      if (conflicting)
        found.push({
          rule: 'transaction-conflict',
          table,
          at,
          detail: `a transaction modifies ${table} while job ${conflicting.id} does: BigQuery aborts the later one`,
        });
      const window = (dmlTimes[table] ?? []).filter((t) => t > at - 10_000);
      const statementsHere = shape.statements.filter((s) => s.table === table).length;
      if (window.length + statementsHere > BIGQUERY_LIMITS.dmlPerTablePer10s)
        found.push({
          rule: 'dml-rate',
          table,
          at,
          detail: `${window.length + statementsHere} DML statements on ${table} within 10 s (BigQuery allows ${BIGQUERY_LIMITS.dmlPerTablePer10s})`,
        });
    }
    return found;
  }

  function record(id: string, shape: JobShape, at: number): void {
    if (shape.kind === 'query') queryJobs++;
    if (shape.kind === 'load' && shape.loadTable) {
      loadJobs++;
      const f = tableFigures(shape.loadTable);
      f.jobs++;
      f.loadJobs++;
      return;
    }
    for (const table of writtenTables(shape)) tableFigures(table).jobs++;
    for (const s of shape.statements) {
      const f = tableFigures(s.table);
      f.dmlStatements++;
      if (MUTATING.has(s.kind)) f.mutatingDml++;
      dmlTimes[s.table] ??= [];
      const times = dmlTimes[s.table]!;
      times.push(at);
      while (times.length > 0 && times[0]! <= at - 10_000) times.shift();
      f.peakDmlPer10s = Math.max(f.peakDmlPer10s, times.length);
    }
    running.set(id, { id, shape, started: at });
    for (const table of mutatedTables(shape)) {
      const f = tableFigures(table);
      const n = [...running.values()].filter((j) => mutatedTables(j.shape).has(table)).length;
      f.peakConcurrentMutatingDml = Math.max(f.peakConcurrentMutatingDml, n);
    }
    if (shape.transaction)
      for (const table of writtenTables(shape)) {
        const f = tableFigures(table);
        const n = [...running.values()].filter(
          (j) => j.shape.transaction && writtenTables(j.shape).has(table),
        ).length;
        f.peakConcurrentTransactions = Math.max(f.peakConcurrentTransactions, n);
      }
  }

  /** Marks a job done when a response says so. */
  function observeDone(body: string): void {
    try {
      const json = JSON.parse(body) as {
        jobReference?: { jobId?: string };
        status?: { state?: string };
        jobComplete?: boolean;
      };
      const id = json.jobReference?.jobId;
      if (!id) return;
      if (json.status?.state === 'DONE' || json.jobComplete === true) running.delete(id);
    } catch {
      // not JSON (an upload's body): nothing to learn
    }
  }

  let seq = 0;
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const path = req.url ?? '/';
      const isInsert =
        req.method === 'POST' &&
        /\/projects\/[^/]+\/(jobs|queries)(\?|$)/.test(path.replace(/^\/upload/, ''));
      let submitted: { shape: JobShape; key: string; at: number } | undefined;
      if (isInsert) {
        const text = body.toString('utf8');
        const isSyncQuery = /\/queries(\?|$)/.test(path);
        // jobs.query (synchronous) sends the SQL at the top level; jobs.insert sends a job resource.
        const resource: JobResource | undefined = isSyncQuery
          ? { configuration: { query: { query: (JSON.parse(text) as { query?: string }).query ?? '' } } }
          : jobResourceOf(text, String(req.headers['content-type'] ?? ''));
        const shape = shapeOfJob(resource?.configuration);
        const at = now();
        const broken = shape.kind === 'load' ? [] : check(shape, at);
        if (broken.length > 0) {
          violations.push(...broken);
          if (enforce) {
            const first = broken[0]!;
            refuse(
              res,
              first.rule === 'dml-rate' ? 'quotaExceeded' : 'invalidQuery',
              `quota proxy: ${first.detail}`,
            );
            return;
          }
        }
        // The client names its jobs; a request without a name is keyed until the response names it.
        const jobId = resource?.jobReference?.jobId ?? `pending-${seq++}`;
        submitted = { shape, key: jobId, at };
        record(jobId, shape, at);
      }
      const upstream = await fetch(new URL(path, target), {
        method: req.method ?? 'GET',
        headers: Object.fromEntries(
          Object.entries(req.headers)
            .filter(([k]) => !['host', 'content-length', 'connection'].includes(k))
            .map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v ?? '')]),
        ),
        ...(body.length > 0 && req.method !== 'GET' ? { body } : {}),
      });
      const text = await upstream.text();
      if (submitted) {
        const wait = submitted.at + minJobMs - now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        // The job id the service gave: re-key the running entry under it, then learn if it is done already.
        try {
          const id = (JSON.parse(text) as { jobReference?: { jobId?: string } }).jobReference?.jobId;
          const entry = running.get(submitted.key);
          if (id && entry && id !== submitted.key) {
            running.delete(submitted.key);
            running.set(id, { ...entry, id });
          }
          if (!upstream.ok) running.delete(id ?? submitted.key);
        } catch {
          running.delete(submitted.key);
        }
      }
      observeDone(text);
      const headers: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k))
          headers[k] = v;
      });
      res.writeHead(upstream.status, headers);
      res.end(text);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 502, message: `quota proxy: ${(err as Error).message}` } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    report: () => ({
      queryJobs,
      loadJobs,
      billedBytesFloor: queryJobs * BIGQUERY_LIMITS.minimumBilledBytesPerQuery,
      tables: structuredClone(figures),
      violations: [...violations],
    }),
    reset() {
      figures = {};
      dmlTimes = {};
      violations = [];
      queryJobs = 0;
      loadJobs = 0;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
