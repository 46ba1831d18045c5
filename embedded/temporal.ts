import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import type { Config } from '../schemas/config.js';
import type { Secrets } from '../schemas/secret.js';
import {
  connectTemporal,
  DEFAULT_TEMPORAL_ADDRESS,
  plaintextApiKeyWarning,
  resolveTemporalConnection,
  type TemporalConnectionSettings,
} from '../worker/temporal-connection.js';
import { DATA_DIR } from './data-dir.js';
import { preferredPort } from './free-port.js';
import { createStepReporter, type StepStarter } from './step-progress.js';

/**
 * The Temporal a process talks to: the configured cluster, or an embedded dev server started here
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

/**
 * Connects to the configured cluster (`connection.address`), or, with none configured and `embed` set,
 * starts an embedded dev server (with UI and on-disk history when asked); with none configured and no
 * embedding, the default address.
 */
export async function temporalTarget(
  options: {
    connection: TemporalConnectionSettings;
    embed: boolean;
    taskQueue: string;
    persistent: boolean;
    ui: boolean;
  },
  logger: Logger,
  step: StepStarter = createStepReporter(),
): Promise<TemporalTarget> {
  const { connection: settings } = options;
  if (settings.address !== undefined || !options.embed) {
    const address = settings.address ?? DEFAULT_TEMPORAL_ADDRESS;
    const exposed = plaintextApiKeyWarning(settings, address);
    if (exposed !== null) logger.warn({ address }, exposed);
    const connections = await connectTemporal(settings, address);
    return {
      address,
      namespace: settings.namespace,
      connection: connections.connection,
      client: connections.client,
      uiUrl: null,
      close: () => connections.close(),
    };
  }
  if (options.persistent) mkdirSync(DATA_DIR, { recursive: true });
  const uiPort = options.ui ? await preferredPort(8233) : undefined;
  logger.info('starting the embedded Temporal dev server');
  const { startTemporalDevServer } = await devOnly(
    () => import('./temporal-server.js'),
    { pkg: '@temporalio/testing', module: 'embedded/temporal-server.js' },
    'the embedded Temporal dev server',
    'TEMPORAL_ADDRESS (or TEMPORAL_PROFILE)',
  );
  const env = await startTemporalDevServer({
    ...(options.persistent ? { dbFilename: join(DATA_DIR, 'temporal.db') } : {}),
    ...(uiPort ? { uiPort } : {}),
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
 * A module of the embedded defaults, loaded only when one is used: their packages are development
 * dependencies, absent from a production install (`npm ci --omit=dev`), and the worker image leaves out the
 * demo's own modules too (its source, the dev server: Dockerfile). Either way the command must name its
 * source, cluster or warehouse instead, and says so.
 */
export async function devOnly<T>(
  load: () => Promise<T>,
  absent: { pkg?: string; module: string },
  what: string,
  setting: string,
): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') {
      const message = (err as Error).message;
      if (absent.pkg && message.includes(absent.pkg))
        throw new Error(
          `${what} needs the development dependency ${absent.pkg}, which this installation omits (npm ci --omit=dev); set ${setting}`,
        );
      if (message.includes(absent.module))
        throw new Error(
          `${what} is not part of this installation (the worker image ships the production code only); set ${setting}`,
        );
    }
    throw err;
  }
}

/**
 * Temporal for a command: the configured cluster (TEMPORAL_ADDRESS, or the address of the TEMPORAL_PROFILE,
 * with its TLS and API key); with none configured, for commands that can run on their own (`start`,
 * `sync --once`, `backfill`, `audit`, `replay`), an embedded dev server, and for the others (`worker`,
 * `setup`, `schedule`) the default address. A bad TLS setting is a ConfigError naming it; a connection that
 * fails, a TemporalConnectionError.
 */
export function temporalFor(
  config: Config,
  logger: Logger,
  options: {
    embedIfUnset: boolean;
    persistent?: boolean;
    ui?: boolean;
    step?: StepStarter;
    /** The process's secrets: the profile's API key and client key join them before any connection. */
    secrets?: Secrets;
  },
): Promise<TemporalTarget> {
  const connection = resolveTemporalConnection(config);
  for (const secret of connection.secrets) options.secrets?.add(secret);
  return temporalTarget(
    {
      connection,
      embed: options.embedIfUnset,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      persistent: options.persistent ?? false,
      ui: options.ui ?? false,
    },
    logger,
    options.step,
  );
}
