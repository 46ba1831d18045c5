import type { Logger } from 'pino';
import { type Activities, createActivities } from '../activities/index.js';
import type { Bookkeeping, Destination } from '../connectors/destination.js';
import { createDestination } from '../connectors/index.js';
import {
  GovernorRegistry,
  type RateGovernor,
  SERVER_WAIT_CAP_WINDOWS,
  SupportApiClient,
} from '../connectors/support-api/index.js';
import { type Config, QUEUED_ROUTE_CLASSES } from '../schemas/config.js';
import { secretsOf } from '../schemas/secret.js';
import { Redactor } from '../schemas/warehouse.js';
import { streamsWithOpenSetAside } from './freshness.js';
import { SyncMetrics } from './metrics.js';

export interface Dependencies {
  client: SupportApiClient;
  destination: Destination;
  activities: Activities;
  /** The process's Prometheus metrics, told by the activities what they do (when asked for). */
  metrics: SyncMetrics | undefined;
  close(): Promise<void>;
}

/**
 * The governors of this process's workers. Several worker processes share each key's budget (the key's
 * budget workflow grants every class's requests to them together: docs/design/rate-budget.md), but a
 * straggler — a request granted in one window that reaches the API in the next — can put one request more
 * into an API window, so no process spends a window's last request: one of ten at a 10-per-window limit,
 * one of 120 at the spec's detail limit (see below why not only once the key is seen shared).
 */
export const FLEET_RESERVE = 1;
/**
 * With rate limits configured, the fleet budget paces every class for the fleet, so the governors only keep
 * each within its window (and the reserve): a second, per-process pacer in series would make each analytics
 * page wait for both, and a wait longer than `maxRateWaitMs` goes back to Temporal as a retry, leaving most
 * of the class's budget unspent. Without them (`SUPPORT_API_RATE_LIMITS=off`) the governors pace,
 * following the API's headers.
 */
// reserveWhenShared stays off: a process learns the key is shared only after a window in which others
// spent it, and in that first window a straggler can put one request more into it than the key's limit,
// a 429. The reserve costs a process alone a tenth of the analytics budget; 0 429s come first.
const fleetGovernors = {
  queuePaced: new GovernorRegistry({
    reserve: FLEET_RESERVE,
    reserveWhenShared: false,
    pacedElsewhere: QUEUED_ROUTE_CLASSES,
  }),
  selfPaced: new GovernorRegistry({ reserve: FLEET_RESERVE, reserveWhenShared: false }),
};

/**
 * The governor of this process for the configured key: the one its workers' fleet budget attaches to
 * (worker/workers.ts), and its clients use.
 */
export function governorOf(config: Config): RateGovernor {
  return (config.SUPPORT_API_RATE_LIMITS ? fleetGovernors.queuePaced : fleetGovernors.selfPaced).for(
    config.SUPPORT_API_KEY,
  );
}

/**
 * The composition root: the API client (one keep-alive pool, one rate governor per key and class), the
 * destination (one pool), with `metrics` the process's metrics watching them, and the activities bound to
 * them — built once per process, and once per further workspace it serves (worker/workers.ts). `metrics`:
 * true makes the process's metrics; the process's metrics themselves (another workspace's dependencies)
 * watch this workspace's activities too, on its bookkeeping.
 */
export async function buildDependencies(
  config: Config,
  logger: Logger,
  options: { metrics?: boolean | SyncMetrics | undefined } = {},
): Promise<Dependencies> {
  const client = new SupportApiClient({
    baseUrl: config.SUPPORT_API_URL,
    apiKey: config.SUPPORT_API_KEY,
    otherSecrets: secretsOf(config),
    governor: governorOf(config),
    logger,
    // Long waits go back to Temporal as a retry at Retry-After instead of holding an activity slot.
    rateLimitMode: 'throw',
    maxRateWaitMs: 5000,
    // A transient error (reset, timeout, 5xx, an HTML error page) on an idempotent read is retried here,
    // after a short jittered delay, each try through the rate governor (it spends the same budget): it
    // costs one request, not an activity retry with Temporal's backoff. What outlasts these tries — a real
    // outage — goes to Temporal, which backs off for SYNC_SOURCE_PATIENCE. Writes are retried only with an
    // Idempotency-Key (client.send).
    retry: { maxAttempts: 4, baseDelayMs: 200, maxDelayMs: 2000 },
    ...clientBoundsOf(config),
  });
  const destination = await destinationFromConfig(config);
  const metrics =
    options.metrics instanceof SyncMetrics
      ? options.metrics
      : options.metrics
        ? syncMetricsOf(config, client, destination.bookkeeping, logger)
        : undefined;
  const observer =
    options.metrics instanceof SyncMetrics
      ? options.metrics.forWorkspace(config.SYNC_WORKSPACE, {
          openSetAside: () => streamsWithOpenSetAside(destination.bookkeeping),
          freshnessSloMs: config.SYNC_FRESHNESS_SLO,
        })
      : metrics;
  const activities = createActivities({
    client,
    destination,
    logger,
    maxPagesPerScope: config.SYNC_MAX_PAGES,
    ...(observer ? { observer } : {}),
    ...(config.SYNC_BUSINESS_HOURS ? { businessHours: config.SYNC_BUSINESS_HOURS.hours } : {}),
  });
  return {
    client,
    destination,
    activities,
    metrics,
    async close() {
      await Promise.allSettled([client.close(), destination.close()]);
    },
  };
}

/**
 * The worker's metrics over its API client and destination: freshness reads bookkeeping only (which
 * streams have items set aside), never a stream's table. With SYNC_METRICS_WORKSPACE_LABEL, the series of a
 * workspace's sync carry its `workspace` label, of SYNC_METRICS_WORKSPACE_LIMIT values at most.
 */
export function syncMetricsOf(
  config: Pick<Config, 'SYNC_FRESHNESS_SLO'> &
    Partial<Pick<Config, 'SYNC_WORKSPACE' | 'SYNC_METRICS_WORKSPACE_LABEL' | 'SYNC_METRICS_WORKSPACE_LIMIT'>>,
  client: Pick<SupportApiClient, 'rateStats'>,
  bookkeeping: Pick<Bookkeeping, 'openRejections'>,
  logger: Logger,
): SyncMetrics {
  return new SyncMetrics({
    rateStats: () => client.rateStats(),
    openSetAside: () => streamsWithOpenSetAside(bookkeeping),
    freshnessSloMs: config.SYNC_FRESHNESS_SLO,
    logger,
    ...(config.SYNC_WORKSPACE ? { workspace: config.SYNC_WORKSPACE } : {}),
    ...(config.SYNC_METRICS_WORKSPACE_LABEL
      ? { workspaceLabel: { limit: config.SYNC_METRICS_WORKSPACE_LIMIT ?? 50 } }
      : {}),
  });
}

/**
 * The client's bounds from the configuration: the deadline of one request, the largest body, and the
 * longest wait a server may name (three rate windows: a 429 costs a short wait, never a stream).
 */
export function clientBoundsOf(config: Config) {
  return {
    deadlineMs: config.SUPPORT_API_REQUEST_DEADLINE,
    maxResponseBytes: config.SUPPORT_API_MAX_RESPONSE_BYTES,
    maxServerWaitMs: SERVER_WAIT_CAP_WINDOWS * config.SUPPORT_API_RATE_WINDOW,
  };
}

/**
 * The destination DESTINATION_URL names, with its options from the configuration — the column policy
 * included, so every row this process writes passes it.
 */
export function destinationFromConfig(config: Config): Promise<Destination> {
  return createDestination(config.DESTINATION_URL.reveal(), {
    schema: config.POSTGRES_SCHEMA,
    redactor: redactorOf(config),
    scope: { workspace: config.SYNC_WORKSPACE, layout: config.SYNC_WAREHOUSE_LAYOUT },
    ...(config.BIGQUERY_API_ENDPOINT ? { apiEndpoint: config.BIGQUERY_API_ENDPOINT } : {}),
    ...(config.BIGQUERY_LOCATION ? { location: config.BIGQUERY_LOCATION } : {}),
    ...(config.BIGQUERY_DEPLOYMENT_DATASET
      ? { newDatasetLocationOf: config.BIGQUERY_DEPLOYMENT_DATASET }
      : {}),
    ...(config.BIGQUERY_STORAGE_ENDPOINT ? { storageEndpoint: config.BIGQUERY_STORAGE_ENDPOINT } : {}),
  });
}

/** The column policy of the configuration with its hash key (no policy: a redactor that changes nothing). */
export function redactorOf(config: Config): Redactor {
  return new Redactor(config.SYNC_COLUMN_POLICY ?? [], config.SYNC_HASH_KEY ?? null);
}
