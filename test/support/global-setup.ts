import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TestProject } from 'vitest/node';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../../embedded/postgres.js';
import { startTemporalDevServer } from '../../embedded/temporal-server.js';
import { bundleWorkflows } from '../../worker/workflow-bundle.js';

/**
 * One PostgreSQL cluster per test run (integration project) and one Temporal dev server per fork (vitest's
 * VITEST_POOL_ID), started the first time a file of that fork asks for it, so a run of one file starts one
 * server (test/support/temporal.ts says why files that run at once do not share one). Test files get the
 * cluster's address through `inject()` and create their own database and task queues. DATABASE_URL, when
 * set, replaces the embedded cluster (it must allow CREATE DATABASE). The workflow code is bundled once per
 * run too, into a file whose path `workflowBundlePath` gives: every file's in-process workers load the same
 * bundle instead of building their own (test/e2e/harness.ts).
 */
export default async function setup(project: TestProject) {
  const log = (line: string) => process.stderr.write(`[global-setup] ${line}\n`);
  const servers = new Map<string, Promise<TestWorkflowEnvironment>>();
  const serverOf = (fork: string) => {
    let server = servers.get(fork);
    if (!server) {
      server = startTemporalDevServer({ log }).then((env) => {
        log(`Temporal dev server of fork ${fork} at ${env.address}`);
        return env;
      });
      servers.set(fork, server);
    }
    return server;
  };
  // Forks ask over HTTP: the global setup runs in vitest's main process, the files in child processes.
  const broker = createServer((req, res) => {
    const fork = /^\/temporal\/([0-9]{1,3})$/.exec(req.url ?? '')?.[1];
    if (!fork) {
      res.writeHead(404).end(`no such path: ${req.url}`);
      return;
    }
    serverOf(fork).then(
      (env) => res.writeHead(200).end(env.address),
      (err: Error) => res.writeHead(500).end(err.message),
    );
  });
  await new Promise<void>((resolve) => broker.listen(0, '127.0.0.1', resolve));
  let postgres: EmbeddedPostgres | undefined;
  const externalUrl = process.env['DATABASE_URL'];
  if (!externalUrl) postgres = await startEmbeddedPostgres({ log });
  const bundleFolder = await mkdtemp(join(tmpdir(), 'support-sync-workflows-'));
  const bundlePath = join(bundleFolder, 'workflows.js');
  await writeFile(bundlePath, await bundleWorkflows());
  project.provide('temporalBroker', `http://127.0.0.1:${(broker.address() as AddressInfo).port}`);
  project.provide('workflowBundlePath', bundlePath);
  project.provide('postgresAdminUrl', externalUrl ?? postgres!.url);
  log(`PostgreSQL ${externalUrl ? 'from DATABASE_URL' : `on port ${postgres!.port}`}`);
  return async () => {
    await new Promise((resolve) => broker.close(resolve));
    await Promise.all(
      [...servers.values()].map((server) => server.then((env) => env.teardown()).catch(() => undefined)),
    );
    await postgres?.stop();
    await rm(bundleFolder, { recursive: true, force: true });
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where a fork asks for its Temporal dev server: GET /temporal/<VITEST_POOL_ID> answers its address. */
    temporalBroker: string;
    postgresAdminUrl: string;
    /** The run's workflow bundle (bundleWorkflows()'s code), written once by this setup. */
    workflowBundlePath: string;
  }
}
