import type { TestProject } from 'vitest/node';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../embedded/postgres.js';
import { startTemporalDevServer } from '../../embedded/temporal-server.js';
import { ANALYTICS_TEST_TASK_QUEUE } from './constants.js';

/**
 * One Temporal dev server and one PostgreSQL cluster per test run (integration project). Test files get
 * their addresses through `inject()` and create their own database / task queues, so files stay isolated.
 * DATABASE_URL, when set, replaces the embedded cluster (it must allow CREATE DATABASE).
 */
export default async function setup(project: TestProject) {
  const log = (line: string) => process.stderr.write(`[global-setup] ${line}\n`);
  const temporal = await startTemporalDevServer({
    log,
    singlePartitionTaskQueues: [ANALYTICS_TEST_TASK_QUEUE],
  });
  let postgres: EmbeddedPostgres | undefined;
  const externalUrl = process.env['DATABASE_URL'];
  if (!externalUrl) postgres = await startEmbeddedPostgres({ log });
  project.provide('temporalAddress', temporal.address);
  project.provide('postgresAdminUrl', externalUrl ?? postgres!.url);
  log(
    `Temporal dev server at ${temporal.address}; PostgreSQL ${externalUrl ? 'from DATABASE_URL' : `on port ${postgres!.port}`}`,
  );
  return async () => {
    await temporal.teardown();
    await postgres?.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    postgresAdminUrl: string;
  }
}
