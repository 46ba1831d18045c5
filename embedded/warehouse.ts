import { mkdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Logger } from 'pino';
import { DATA_DIR } from './data-dir.js';
import { preferredPort } from './free-port.js';
import { type EmbeddedPostgres, startEmbeddedPostgres } from './postgres.js';
import type { StepStarter } from './step-progress.js';

/** The libpq service the banner tells users to connect through (password kept out of argv and history). */
export const PG_SERVICE_NAME = 'support-sync';

export interface EmbeddedWarehouse extends EmbeddedPostgres {
  /** A pg_service.conf (mode 0600) holding the connection, password included. */
  readonly serviceFile: string;
  /** The connection URL without its password, for printing. */
  readonly displayUrl: string;
  /** How to open psql on it without putting the password on a command line. */
  readonly psqlCommand: string;
}

/** The embedded PostgreSQL of the main job: data kept in .data/postgres between runs. */
export async function embeddedWarehouse(logger: Logger, step?: StepStarter): Promise<EmbeddedWarehouse> {
  mkdirSync(DATA_DIR, { recursive: true });
  const postgres = await startEmbeddedPostgres({
    dataDir: join(DATA_DIR, 'postgres'),
    persistent: true,
    port: await preferredPort(54329),
    log: (line) => logger.info(line),
    ...(step ? { step } : {}),
  });
  const url = new URL(postgres.url);
  const serviceFile = join(DATA_DIR, 'pg_service.conf');
  // A service file, not a URL with the password, so the password never lands in a process list or shell history.
  await writeFile(
    serviceFile,
    [
      `[${PG_SERVICE_NAME}]`,
      `host=${url.hostname}`,
      `port=${url.port}`,
      `user=${decodeURIComponent(url.username)}`,
      `password=${decodeURIComponent(url.password)}`,
      `dbname=${url.pathname.slice(1)}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  url.password = '';
  const shown = relative(process.cwd(), serviceFile) || serviceFile;
  return Object.assign(postgres, {
    serviceFile,
    displayUrl: url.toString(),
    psqlCommand: `PGSERVICEFILE=${shown} psql service=${PG_SERVICE_NAME}`,
  });
}
