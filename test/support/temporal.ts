import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';

/**
 * The Temporal dev server of the fork this test file runs in. Files that run at the same time never share a
 * server: a run's window workflows are named by their window (`<pass>/<from>/<before>`), and a restarted
 * main job looks for any running sync run in its namespace, so two files on one server would meet each
 * other's workflows. Files that run one after the other in the same fork share its server, each on task
 * queues of its own. The global setup starts a fork's server the first time the fork asks
 * (test/support/global-setup.ts); test/support/fork-temporal.ts asks before each file.
 */
let address: string | undefined;

/** Asks the global setup for this fork's server (started on the first ask) and keeps its address. */
export async function claimForkTemporalServer(): Promise<string> {
  if (address) return address;
  const fork = process.env['VITEST_POOL_ID'] ?? '1';
  const res = await fetch(`${inject('temporalBroker')}/temporal/${encodeURIComponent(fork)}`);
  const body = await res.text();
  if (!res.ok) throw new Error(`the Temporal dev server of fork ${fork}: ${res.status} ${body}`);
  address = body;
  return address;
}

/** This fork's dev server address (host:port). */
export function testTemporalAddress(): string {
  if (!address)
    throw new Error(
      "no Temporal dev server claimed for this file: test/support/fork-temporal.ts is the integration project's setup file",
    );
  return address;
}

/** Connects to this fork's dev server. Call `teardown()` in afterAll. */
export function connectToTestServer(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createFromExistingServer({ address: testTemporalAddress() });
}
