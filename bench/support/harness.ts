/**
 * What the pipeline benches (budget, pipeline, sweep, thread-faults) share, so that each keeps only what it
 * measures and prints: their flags, the progress log, the services (an embedded PostgreSQL and a Temporal
 * dev server), a companion world wired to a database and a task queue, in-process workers, a timed sync
 * run, and the reads of the companion's request log and lists that their figures are made of.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import pino from 'pino';
import type { CompanionHandle, RequestLogEntry } from '../../companion/index.js';
import { type Page, routeClassFor, SupportApiClient } from '../../connectors/support-api/index.js';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../embedded/postgres.js';
import { startTemporalDevServer } from '../../embedded/temporal-server.js';
import type { Config, QueuedRouteClass } from '../../schemas/config.js';
import { QUEUED_ROUTE_CLASSES } from '../../schemas/config.js';
import type { SyncMode, SyncRunInput, SyncSettings } from '../../schemas/run-input.js';
import type { RunProgress } from '../../schemas/run-summary.js';
import { Secret } from '../../schemas/secret.js';
import { ALL_STREAMS, type StreamName } from '../../schemas/streams.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import { loadConfig, settingsFromConfig } from '../../worker/config.js';
import { newRunId, type RunSummary, runSync } from '../../worker/run-sync.js';
import { pacingOf, startWorkers } from '../../worker/workers.js';
import { loadWorkflows } from '../../worker/workflow-bundle.js';

/** A progress line on stderr (stdout carries the figures), with the time of day. */
export const log = (line: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

type FlagOptions = NonNullable<ParseArgsConfig['options']>;

/** `--seed`: every bench's companion world is seeded, 7 unless told. */
const SEED_FLAG = { seed: { type: 'string', default: '7' } } as const;

/**
 * The bench's flags, plus `--seed` and `--help` (prints `usage` and exits before anything starts). Unknown
 * flags are an error, as with parseArgs.
 */
export function benchFlags<const O extends FlagOptions>(usage: string, options: O) {
  if (process.argv.slice(2).includes('--help')) {
    process.stdout.write(`${usage}\n`);
    process.exit(0);
  }
  return parseArgs({ options: { ...options, ...SEED_FLAG } }).values;
}

/** The services every sync of a bench runs on: one PostgreSQL cluster and one Temporal dev server. */
export interface Services {
  postgres: EmbeddedPostgres;
  temporal: TestWorkflowEnvironment;
  /** Stops the dev server, then PostgreSQL. */
  stop(): Promise<void>;
}

/** Starts the services: an embedded PostgreSQL and a Temporal dev server. */
export async function startServices(): Promise<Services> {
  const postgres = await startEmbeddedPostgres({});
  const temporal = await startTemporalDevServer();
  return {
    postgres,
    temporal,
    async stop() {
      await temporal.teardown();
      await postgres.stop();
    },
  };
}

/** Where one sync of a bench reads and writes: its companion, database and task queue, as configuration. */
export interface SyncTarget {
  taskQueue: string;
  /** The destination: a PostgreSQL database's URL, or `destinationUrl` as given. */
  databaseUrl: string;
  /** The environment of a worker process (`npm run worker`) for this target. */
  env: Record<string, string>;
  config: Config;
}

/**
 * A new database named `database` on the services' cluster (or the warehouse at `destinationUrl`, e.g. a
 * BigQuery dataset), and the configuration that syncs `companion` into it on `taskQueue`; `env` adds or
 * overrides settings (rate window, start date, log level…).
 */
export async function syncTarget(
  services: Services,
  companion: CompanionHandle,
  options: ({ database: string } | { destinationUrl: string }) & {
    taskQueue: string;
    env: Record<string, string>;
  },
): Promise<SyncTarget> {
  const databaseUrl =
    'destinationUrl' in options
      ? options.destinationUrl
      : await services.postgres.createDatabase(options.database);
  const env: Record<string, string> = {
    SUPPORT_API_URL: companion.baseUrl,
    SUPPORT_API_KEY: companion.keys.admin,
    DESTINATION_URL: databaseUrl,
    TEMPORAL_ADDRESS: services.temporal.address,
    TEMPORAL_TASK_QUEUE: options.taskQueue,
    ...options.env,
  };
  return { taskQueue: options.taskQueue, databaseUrl, env, config: loadConfig({}, undefined, env) };
}

/** Workers in this process for a target (what `npm run worker` runs), silent; `stop` also closes `deps`. */
export async function startInProcessWorkers(
  services: Services,
  target: SyncTarget,
): Promise<{ deps: Dependencies; stop(): Promise<void> }> {
  const deps = await buildDependencies(target.config, pino({ level: 'silent' }));
  const workers = await startWorkers({
    connection: services.temporal.nativeConnection,
    namespace: 'default',
    taskQueue: target.taskQueue,
    activities: deps.activities,
    workflowBundle: (await loadWorkflows()).bundle,
    ...pacingOf(target.config),
    // A bench ends when its figures are in: no activity is worth waiting 30 s for.
    shutdownGraceTime: '5 seconds',
  });
  return {
    deps,
    async stop() {
      await workers.shutdown();
      await deps.close();
    },
  };
}

export interface SyncRunOptions {
  mode?: SyncMode;
  streams?: StreamName[];
  /** Settings over those of the target's configuration. */
  settings?: Partial<SyncSettings>;
  range?: SyncRunInput['range'];
  /** The run's progress about once a second, with the time since it started. */
  onProgress?: (progress: RunProgress, elapsedMs: number) => void;
}

/**
 * One sync run on the target (incremental, every stream, unless told), timed from its start to its result;
 * a run that does not succeed fails the bench (its figures would not mean what they say).
 */
export async function timedSync(
  services: Services,
  target: SyncTarget,
  label: string,
  options: SyncRunOptions = {},
): Promise<{ ms: number; summary: RunSummary }> {
  const now = new Date();
  const started = performance.now();
  const settings: SyncSettings = { ...settingsFromConfig(target.config, now), ...options.settings };
  const summary = await runSync(
    services.temporal.client,
    target.taskQueue,
    {
      runId: newRunId(now),
      mode: options.mode ?? 'incremental',
      streams: options.streams ?? [...ALL_STREAMS],
      settings,
      ...(options.range ? { range: options.range } : {}),
    },
    options.onProgress && ((progress) => options.onProgress?.(progress, performance.now() - started)),
  );
  const ms = performance.now() - started;
  if (summary.status !== 'succeeded') throw new Error(`${label} failed: ${summary.error}`);
  return { ms, summary };
}

/** The route class of a request in the companion's log (its paths carry the /public/v1 prefix). */
export function routeClassOf(entry: RequestLogEntry): string {
  return routeClassFor(entry.method, entry.path.replace(/^\/public\/v1/, ''));
}

/** Requests per queued route class (list, detail, analytics, directory) in a request log; the rest: other. */
export function requestsByClass(
  entries: readonly RequestLogEntry[],
): Record<QueuedRouteClass | 'other', number> {
  const out = Object.fromEntries([...QUEUED_ROUTE_CLASSES, 'other'].map((c) => [c, 0])) as Record<
    QueuedRouteClass | 'other',
    number
  >;
  for (const e of entries) {
    const c = routeClassOf(e);
    out[c in out ? (c as QueuedRouteClass) : 'other'] += 1;
  }
  return out;
}

/** A plain client on the companion's admin key, for a bench's own reads (baselines, lower bounds). */
export function sourceClient(companion: CompanionHandle): SupportApiClient {
  return new SupportApiClient({
    baseUrl: companion.baseUrl,
    apiKey: new Secret(companion.keys.admin),
    logger: pino({ level: 'error' }),
  });
}

/** Every page of a list, one after the other: the number of items on each. */
export async function crawl<T>(
  fetch: (cursor: string | null) => Promise<Page<T, unknown>>,
): Promise<number[]> {
  const sizes: number[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page: Page<T, unknown> = await fetch(cursor);
    sizes.push(page.items.length);
    if (!page.hasMore) return sizes;
    cursor = page.nextCursor;
  }
}

export const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Requests a list of `n` items needs at the maximum page size (100): at least one, even when empty. */
export const pagesAt100 = (n: number) => Math.max(1, Math.ceil(n / 100));
