import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { DATA_DIR } from './data-dir.js';
import { preferredPort } from './free-port.js';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './postgres.js';
import type { StepStarter } from './step-progress.js';

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
