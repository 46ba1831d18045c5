/**
 * BigQuery's documented per-table limits, kept in front of the emulator.
 *
 * bqemulator (DuckDB) runs any number of MERGEs and transactions on one table at once; the real service does
 * not. This HTTP proxy sits between a BigQuery client and the emulator, reads every request the client
 * sends — jobs (`jobs.insert`, multipart uploads of load jobs, the `jobs.query` fast path), table operations
 * (`tables.insert/patch/update/delete`) and streaming inserts (`tabledata.insertAll`) — and counts per table
 * what BigQuery's quota and DML pages bound (the rules and figures: bigquery-quota-ledger.ts; what a request
 * does: bigquery-job-shapes.ts; the bill: bigquery-billing.ts).
 *
 * A job counts as running from its insert until the client first sees it done (`jobs.get` state DONE or
 * `jobs.getQueryResults` jobComplete) — an upper bound of the server's own running time, so the check errs
 * strict. With `enforce`, a job or table operation that would break a rule is refused the way BigQuery
 * fails it (HTTP 400 `invalidQuery` for concurrency and conflicts, 403 `quotaExceeded` /
 * `rateLimitExceeded` for rates), so a destination that does not keep the rules fails its test; without,
 * the proxy only records (for benches).
 *
 * It also keeps BigQuery's location rule (bigquery-locations.ts), which the emulator does not: a job whose
 * location does not hold a dataset it references is refused as BigQuery fails it (404 `notFound`), with or
 * without `enforce`, and counted among the violations (rule `location`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { logicalBytesOfNdjson } from './bigquery-billing.js';
import {
  type JobResource,
  type JobShape,
  jobResourceOf,
  multipartParts,
  requestKindOf,
  routeOf,
  shapeOfJob,
} from './bigquery-job-shapes.js';
import { DatasetLocations, type LocatedJob, locationMismatchError } from './bigquery-locations.js';
import { QuotaLedger, type QuotaReport, type QuotaViolation } from './bigquery-quota-ledger.js';

export {
  BIGQUERY_LIMITS,
  type QuotaReport,
  type QuotaViolation,
  type TableQuotaFigures,
} from './bigquery-quota-ledger.js';

export interface BigQueryQuotaProxy {
  /** Endpoint to give the client (`apiEndpoint`) instead of the emulator's. */
  readonly endpoint: string;
  report(): QuotaReport;
  /** Forget what was counted so far (between phases of a test). */
  reset(): void;
  stop(): Promise<void>;
}

/**
 * Headers of one connection, not of the request: forwarded, they break it (a load job's upload comes
 * chunked, and a body re-sent whole with `transfer-encoding: chunked` is refused by fetch).
 */
const HOP_BY_HOP = new Set([
  'host',
  'content-length',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'proxy-connection',
]);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function refuse(res: ServerResponse, violation: QuotaViolation): void {
  const rate = violation.rule === 'dml-rate' || violation.rule === 'table-metadata-rate';
  const status = rate ? 403 : 400;
  const reason =
    violation.rule === 'table-metadata-rate' ? 'rateLimitExceeded' : rate ? 'quotaExceeded' : 'invalidQuery';
  const message = `quota proxy: ${violation.detail}`;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(
    JSON.stringify({
      error: {
        code: status,
        message,
        errors: [{ reason, message }],
        status: rate ? 'PERMISSION_DENIED' : 'INVALID_ARGUMENT',
      },
    }),
  );
}

/** The rows a load job uploads, sized by its schema (multipart: metadata, then the data). */
function loadedBytesOf(
  resource: JobResource | undefined,
  body: string,
  contentType: string,
): number | undefined {
  const fields = resource?.configuration?.load?.schema?.fields;
  const data = multipartParts(body, contentType)[1];
  if (!fields || data === undefined) return undefined;
  try {
    return logicalBytesOfNdjson(fields, data);
  } catch {
    return undefined; // not newline-delimited JSON: the staging table's size stays unknown (0)
  }
}

/** How long a request that an outage leaves unanswered holds its socket. */
const OUTAGE_TIMEOUT_MS = 30_000;

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
    /** A table's logical size in bytes for the bill (bigquery-billing.ts); undefined when not known. */
    tableBytes?: (table: string) => number | undefined;
    /**
     * Told of every query job as it arrives, before it is forwarded (tests: kill a worker while a given
     * statement runs). Its SQL only; nothing else of the request.
     */
    onQuery?: (sql: string) => void;
    /**
     * An outage: while it returns a status (e.g. 503), every request is answered with it instead of being
     * forwarded, or, for `'timeout'`, not answered at all (the socket is dropped after `timeoutMs`).
     */
    outage?: () => number | 'timeout' | null;
  } = {},
): Promise<BigQueryQuotaProxy> {
  const now = options.now ?? Date.now;
  const minJobMs = options.minJobMs ?? 0;
  const enforce = options.enforce ?? true;
  const ledger = new QuotaLedger(options.tableBytes);
  const locations = new DatasetLocations();

  /** Records what broke; with `enforce`, answers the request as BigQuery would and says so. */
  function refused(res: ServerResponse, broken: readonly QuotaViolation[]): boolean {
    if (broken.length === 0) return false;
    ledger.violate(broken);
    if (!enforce) return false;
    refuse(res, broken[0]!);
    return true;
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
      if (json.status?.state === 'DONE' || json.jobComplete === true) ledger.done(id);
    } catch {
      // not JSON: nothing to learn
    }
  }

  let seq = 0;
  const server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const path = req.url ?? '/';
      const method = req.method ?? 'GET';
      const contentType = String(req.headers['content-type'] ?? '');
      ledger.countRequest(routeOf(method, path));
      const down = options.outage?.() ?? null;
      if (down === 'timeout') {
        // No answer: the client's own timeout (or the socket's) ends the request.
        req.socket.setTimeout(OUTAGE_TIMEOUT_MS, () => req.socket.destroy());
        return;
      }
      if (down !== null) {
        res.writeHead(down, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: down, message: 'quota proxy: simulated outage' } }));
        return;
      }
      const request = requestKindOf(method, path);
      const at = now();
      let submitted: { shape: JobShape; key: string; at: number } | undefined;
      if (request.kind === 'jobs.insert' || request.kind === 'jobs.query') {
        const text = body.toString('utf8');
        // jobs.query (the client's fast path) sends the SQL at the top level; jobs.insert a job resource.
        const resource: JobResource | undefined =
          request.kind === 'jobs.query'
            ? { configuration: { query: { query: (JSON.parse(text) as { query?: string }).query ?? '' } } }
            : jobResourceOf(text, contentType);
        const sql = resource?.configuration?.query?.query;
        if (sql !== undefined) options.onQuery?.(sql);
        const located = (request.kind === 'jobs.query' ? undefined : resource) as LocatedJob | undefined;
        const mismatch =
          request.kind === 'jobs.query'
            ? locations.mismatchOf(
                { configuration: { query: { query: sql ?? '' } } },
                (JSON.parse(text) as { location?: string }).location,
              )
            : locations.mismatchOf(located, located?.jobReference?.location);
        if (mismatch) {
          const refusal = locationMismatchError(
            /^\/(?:bigquery\/v2\/)?projects\/([^/]+)/.exec(path.replace(/^\/upload/, ''))?.[1] ?? '',
            mismatch,
          );
          ledger.violate([
            {
              rule: 'location',
              table: `${mismatch.dataset}.*`,
              at,
              detail: `a job in ${mismatch.jobLocation} references dataset ${mismatch.dataset}, which is in ${mismatch.datasetLocation}`,
            },
          ]);
          res.writeHead(refusal.status, { 'content-type': 'application/json' });
          res.end(refusal.body);
          return;
        }
        const shape = shapeOfJob(resource?.configuration);
        const broken =
          shape.kind === 'load' ? ledger.checkTableOp(shape.loadTable!, at) : ledger.check(shape, at);
        if (refused(res, broken)) return;
        // The client names its jobs; a request without a name is keyed until the response names it.
        const jobId = resource?.jobReference?.jobId ?? `pending-${seq++}`;
        submitted = { shape, key: jobId, at };
        const loaded = shape.kind === 'load' ? loadedBytesOf(resource, text, contentType) : undefined;
        ledger.record(jobId, shape, at, loaded);
      } else if (request.kind === 'tables.insert') {
        const table = (JSON.parse(body.toString('utf8') || '{}') as { tableReference?: { tableId?: string } })
          .tableReference?.tableId;
        if (table) {
          if (refused(res, ledger.checkTableOp(table, at))) return;
          ledger.tableOp(table, at, 'create');
        }
      } else if (request.kind === 'tabledata.insertAll') {
        ledger.streamingInsert(request.table);
      } else if (request.kind === 'tabledata.list') {
        ledger.tableRead(request.table);
      } else if (
        request.kind === 'tables.patch' ||
        request.kind === 'tables.update' ||
        request.kind === 'tables.delete'
      ) {
        if (refused(res, ledger.checkTableOp(request.table, at))) return;
        ledger.tableOp(request.table, at, request.kind === 'tables.delete' ? 'drop' : 'alter');
      }
      const upstream = await fetch(new URL(path, target), {
        method,
        headers: Object.fromEntries(
          Object.entries(req.headers)
            .filter(([k]) => !HOP_BY_HOP.has(k))
            .map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : String(v ?? '')]),
        ),
        ...(body.length > 0 && method !== 'GET' ? { body } : {}),
      });
      const text = await upstream.text();
      locations.observe(method, path, body.toString('utf8'), upstream.status, text);
      if (upstream.ok) locations.forget(method, path);
      if (submitted) {
        const wait = submitted.at + minJobMs - now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        // The job id the service gave: re-key the running entry under it, then learn if it is done already.
        try {
          const id = (JSON.parse(text) as { jobReference?: { jobId?: string } }).jobReference?.jobId;
          if (id) ledger.rename(submitted.key, id);
          if (!upstream.ok) ledger.done(id ?? submitted.key);
        } catch {
          ledger.done(submitted.key);
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
      const cause = (err as Error & { cause?: Error }).cause?.message;
      const message = `quota proxy: ${(err as Error).message}${cause ? ` (${cause})` : ''}`;
      res.end(JSON.stringify({ error: { code: 502, message } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    endpoint: `http://127.0.0.1:${port}`,
    report: () => ledger.report(),
    reset: () => ledger.reset(),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
