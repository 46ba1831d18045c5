import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { SyncMetrics } from './metrics.js';
import { temporalRuntimeMetricsUrl } from './temporal-runtime.js';

/**
 * Where `--metrics-port` listens: a port (on METRICS_HOST, by default the loopback interface), or host and
 * port; port 0 picks a free one.
 */
export interface MetricsAddress {
  readonly host?: string;
  readonly port: number;
}

export interface MetricsEndpoint {
  /** `http://<host>:<port>/metrics`, with the port actually bound. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Whether the process does its job, for an orchestrator's readiness probe: `ready` true once its workers are
 * connected to Temporal and polling, with a word on why not otherwise (`starting`, `stopping`).
 */
export type Readiness = () => { ready: boolean; detail: string };

/** Before anything said otherwise: not ready, starting. */
export const STARTING: Readiness = () => ({ ready: false, detail: 'starting' });

/** How long a scrape waits for the Temporal SDK's exporter before answering without its metrics. */
const RUNTIME_METRICS_TIMEOUT_MS = 2000;

/**
 * Serves `GET /metrics` in the Prometheus text format: the sync's metrics (worker/metrics.ts) followed by the
 * Temporal SDK's runtime metrics, which the SDK's own exporter serves on a loopback address
 * (`runtimeMetricsUrl`, worker/temporal-runtime.ts) and which are fetched for each scrape — one scrape target
 * per worker, and the SDK's exporter, which has no authentication of its own, never on the network.
 * Beside it, the probes of an orchestrator: `GET /healthz` (200 while the process serves at all) and
 * `GET /readyz` (200 when `readiness` says ready, else 503; the body says why).
 */
export async function serveMetrics(
  metrics: SyncMetrics,
  address: MetricsAddress,
  runtimeMetricsUrl: string | null,
  logger: Logger,
  readiness: () => Readiness = () => STARTING,
): Promise<MetricsEndpoint> {
  const server = createServer((req, res) => {
    // Whatever a request holds (a target no URL parser takes, a readiness check that throws), it is answered
    // and never escapes the handler: an exception here would end the worker.
    try {
      route(req, res);
    } catch (err) {
      logger.warn({ err }, 'metrics: request failed');
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('internal error\n');
    }
  });
  const route = (req: IncomingMessage, res: ServerResponse): void => {
    const path = requestPath(req.url);
    if (path === null) {
      res
        .writeHead(400, { 'content-type': 'text/plain' })
        .end('bad request: the request target is not a path\n');
      return;
    }
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (req.method === 'GET' && path === '/readyz') {
      const { ready, detail } = readiness()();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(`${detail}\n`);
      return;
    }
    if (req.method !== 'GET' || path !== '/metrics') {
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: GET /metrics, /healthz or /readyz\n');
      return;
    }
    void scrape(metrics, runtimeMetricsUrl).then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      (err: unknown) => {
        logger.warn({ err }, 'metrics: scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n');
      },
    );
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `--metrics-port: cannot listen on ${address.host ?? '*'}:${address.port} (${err.code ?? err.message})`,
        ),
      ),
    );
    server.listen(address.port, address.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host =
    !address.host || address.host === '0.0.0.0' || address.host === '::' ? 'localhost' : address.host;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The endpoint of this process's metrics and probes at `address` (on `defaultHost`, METRICS_HOST, when it
 * names no host), with the Temporal SDK's metrics when the runtime was installed with them; none without an
 * address (or without metrics). `readiness` is read at each probe: the caller sets it once its workers run.
 */
export function openMetricsEndpoint(
  metrics: SyncMetrics | undefined,
  address: MetricsAddress | undefined,
  defaultHost: string,
  logger: Logger,
  readiness?: () => Readiness,
): Promise<MetricsEndpoint | undefined> {
  if (!metrics || !address) return Promise.resolve(undefined);
  return serveMetrics(
    metrics,
    { host: address.host ?? defaultHost, port: address.port },
    temporalRuntimeMetricsUrl(),
    logger,
    readiness,
  );
}

/**
 * The path of a request target (origin form `/metrics?x`, or absolute form `http://host/metrics`), or null
 * when it is not one a URL parser takes (`http://a:b:c/`): the client's fault, answered 400.
 */
function requestPath(target: string | undefined): string | null {
  const url = URL.parse(target ?? '/', 'http://metrics.local');
  return url === null ? null : url.pathname;
}

/** The sync's metrics, then the SDK's (when its exporter answers; `support_sync_temporal_runtime_metrics_up` says). */
async function scrape(metrics: SyncMetrics, runtimeMetricsUrl: string | null): Promise<string> {
  const runtime = runtimeMetricsUrl ? await runtimeMetrics(runtimeMetricsUrl) : null;
  if (runtimeMetricsUrl) metrics.runtimeMetricsRead(runtime !== null);
  const syncMetrics = await metrics.registry.metrics();
  return runtime ? `${syncMetrics.trimEnd()}\n${runtime.trimEnd()}\n` : syncMetrics;
}

async function runtimeMetrics(url: string): Promise<string | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(RUNTIME_METRICS_TIMEOUT_MS) });
    return res.ok ? await res.text() : null;
  } catch {
    return null;
  }
}
