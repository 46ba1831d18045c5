import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { CompanionHandle } from '../companion/index.js';
import type { Config } from '../schemas/config.js';
import { analyticsQueueOf } from './config.js';
import { freePort } from './embedded/free-port.js';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded/postgres.js';
import { startTemporalDevServer } from './embedded/temporal-server.js';
import { createStepReporter, type StepStarter } from './step-progress.js';

/** Where the main job keeps its embedded state (PostgreSQL cluster, Temporal history). */
export const DATA_DIR = resolve(process.env['SUPPORT_SYNC_DATA_DIR'] ?? '.data');

export interface TemporalTarget {
  address: string;
  namespace: string;
  client: Client;
  connection: NativeConnection;
  uiUrl: string | null;
  close(): Promise<void>;
}

/** Connects to TEMPORAL_ADDRESS, or starts an embedded dev server (with UI and on-disk history when asked). */
export async function temporalTarget(
  options: {
    address?: string | undefined;
    namespace: string;
    taskQueue: string;
    persistent: boolean;
    ui: boolean;
  },
  logger: Logger,
  step: StepStarter = createStepReporter(),
): Promise<TemporalTarget> {
  if (options.address) {
    const connection = await NativeConnection.connect({ address: options.address });
    const clientConnection = await Connection.connect({ address: options.address });
    return {
      address: options.address,
      namespace: options.namespace,
      connection,
      client: new Client({ connection: clientConnection, namespace: options.namespace }),
      uiUrl: null,
      async close() {
        await connection.close();
        await clientConnection.close();
      },
    };
  }
  if (options.persistent) mkdirSync(DATA_DIR, { recursive: true });
  const uiPort = options.ui ? await preferredPort(8233) : undefined;
  logger.info('starting the embedded Temporal dev server');
  const env = await startTemporalDevServer({
    ...(options.persistent ? { dbFilename: join(DATA_DIR, 'temporal.db') } : {}),
    ...(uiPort ? { uiPort } : {}),
    singlePartitionTaskQueues: [analyticsQueueOf(options.taskQueue)],
    log: (line) => logger.info(line),
    step,
  });
  return {
    address: env.address,
    namespace: 'default',
    connection: env.nativeConnection,
    client: env.client,
    uiUrl: uiPort ? `http://127.0.0.1:${uiPort}` : null,
    close: () => env.teardown(),
  };
}

/**
 * Temporal for a command: TEMPORAL_ADDRESS when it is set in the environment; otherwise, for commands that
 * can run on their own (`start`, `sync --once`, `backfill`, `replay`), an embedded dev server, and for the
 * others (`worker`, `schedule`) the configured default address.
 */
export function temporalFor(
  config: Config,
  logger: Logger,
  options: { embedIfUnset: boolean; persistent?: boolean; ui?: boolean; step?: StepStarter },
): Promise<TemporalTarget> {
  const fromEnv = process.env['TEMPORAL_ADDRESS'] || undefined;
  return temporalTarget(
    {
      address: options.embedIfUnset ? fromEnv : config.TEMPORAL_ADDRESS,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      persistent: options.persistent ?? false,
      ui: options.ui ?? false,
    },
    logger,
    options.step,
  );
}

/** The embedded PostgreSQL of the main job: data kept in .data/postgres between runs. */
export async function embeddedWarehouse(logger: Logger, step?: StepStarter): Promise<EmbeddedPostgres> {
  mkdirSync(DATA_DIR, { recursive: true });
  return startEmbeddedPostgres({
    dataDir: join(DATA_DIR, 'postgres'),
    persistent: true,
    port: await preferredPort(54329),
    log: (line) => logger.info(line),
    ...(step ? { step } : {}),
  });
}

/** The seeded companion as the demo source. */
export async function embeddedSource(options: {
  seed: number;
  tickets: number;
  rateLimitWindowMs: number;
}): Promise<CompanionHandle> {
  const { startCompanion } = await import('../companion/index.js');
  return startCompanion({
    seed: options.seed,
    tickets: options.tickets,
    port: 0,
    rateLimitWindowMs: options.rateLimitWindowMs,
    // The demo's workspace lives: a second run shows changes flowing. It lives since the first start (kept in
    // .data), so a restart serves the workspace the warehouse was synced from, plus what changed since.
    live: { intervalMs: 2000, changesPerTick: 3, since: demoWorldSince(options.seed, options.tickets) },
  });
}

/**
 * When the demo's world began: `.data/companion.json`, written by the first start. A different seed or size
 * begins a new world (and so does a new data directory, with a new warehouse).
 */
function demoWorldSince(seed: number, tickets: number): Date {
  const file = join(DATA_DIR, 'companion.json');
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as {
      seed?: number;
      tickets?: number;
      since?: string;
    };
    if (
      saved.seed === seed &&
      saved.tickets === tickets &&
      saved.since &&
      !Number.isNaN(Date.parse(saved.since))
    )
      return new Date(saved.since);
  } catch {
    // first start, or an unreadable file: a new world
  }
  const since = new Date();
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(file, `${JSON.stringify({ seed, tickets, since: since.toISOString() })}\n`);
  return since;
}

async function preferredPort(port: number): Promise<number> {
  const { createServer } = await import('node:net');
  const free = await new Promise<boolean>((resolveFree) => {
    const server = createServer();
    server.once('error', () => resolveFree(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)));
  });
  return free ? port : freePort();
}
