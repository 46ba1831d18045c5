import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../embedded/postgres.js';
import { startTemporalDevServer } from '../../embedded/temporal-server.js';
import { bundleWorkflows } from '../../worker/workflow-bundle.js';
import { ANALYTICS_TEST_TASK_QUEUE } from './constants.js';

/**
 * One Temporal dev server and one PostgreSQL cluster per test run (integration project). Test files get
 * their addresses through `inject()` and create their own database / task queues, so files stay isolated.
 * DATABASE_URL, when set, replaces the embedded cluster (it must allow CREATE DATABASE). The workflow code is
 * bundled once per run too, into a file whose path `workflowBundlePath` gives: every file's in-process
 * workers load the same bundle instead of building their own (test/e2e/harness.ts).
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
  const bundleFolder = await mkdtemp(join(tmpdir(), 'support-sync-workflows-'));
  const bundlePath = join(bundleFolder, 'workflows.js');
  await writeFile(bundlePath, await bundleWorkflows());
  project.provide('temporalAddress', temporal.address);
  project.provide('workflowBundlePath', bundlePath);
  project.provide('postgresAdminUrl', externalUrl ?? postgres!.url);
  log(
    `Temporal dev server at ${temporal.address}; PostgreSQL ${externalUrl ? 'from DATABASE_URL' : `on port ${postgres!.port}`}`,
  );
  return async () => {
    await temporal.teardown();
    await postgres?.stop();
    await rm(bundleFolder, { recursive: true, force: true });
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    postgresAdminUrl: string;
    /** The run's workflow bundle (bundleWorkflows()'s code), written once by this setup. */
    workflowBundlePath: string;
  }
}
