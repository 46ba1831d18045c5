import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Config } from '../schemas/config.js';
import { analyticsQueueOf } from '../worker/config.js';
import { DATA_DIR } from './data-dir.js';
import { preferredPort } from './free-port.js';
import { createStepReporter, type StepStarter } from './step-progress.js';
import { startTemporalDevServer } from './temporal-server.js';

/**
 * The Temporal a process talks to: the cluster at TEMPORAL_ADDRESS, or an embedded dev server started here
 * (with its UI and on-disk history for the main job).
 */
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
  options: {
    embedIfUnset: boolean;
    persistent?: boolean;
    ui?: boolean;
    step?: StepStarter;
    /** TEMPORAL_ADDRESS was given (environment or --config file); default: set in the environment. */
    addressConfigured?: boolean;
  },
): Promise<TemporalTarget> {
  const configured = options.addressConfigured ?? Boolean(process.env['TEMPORAL_ADDRESS']);
  return temporalTarget(
    {
      address: !options.embedIfUnset || configured ? config.TEMPORAL_ADDRESS : undefined,
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      persistent: options.persistent ?? false,
      ui: options.ui ?? false,
    },
    logger,
    options.step,
  );
}
