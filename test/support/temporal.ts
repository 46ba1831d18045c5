import { TestWorkflowEnvironment } from '@temporalio/testing';
import { inject } from 'vitest';

/** Connects to the run's shared dev server (started by global-setup). Call `teardown()` in afterAll. */
export function connectToTestServer(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createFromExistingServer({ address: inject('temporalAddress') });
}
