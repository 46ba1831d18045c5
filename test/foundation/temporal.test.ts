import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToTestServer } from '../support/temporal.js';
import { echoWorkflow } from './echo-workflow.js';

describe('Temporal dev server provisioned by the project', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await connectToTestServer();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('registers the custom search attributes', async () => {
    const response = await env.connection.operatorService.listSearchAttributes({ namespace: 'default' });
    expect(Object.keys(response.customAttributes)).toEqual(
      expect.arrayContaining(['SyncStream', 'WindowStart', 'WindowEnd']),
    );
  });

  it('runs a workflow with an activity on a real worker', async () => {
    const taskQueue = `foundation-${Date.now()}`;
    const worker = await Worker.create({
      connection: env.nativeConnection,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./echo-workflow.ts', import.meta.url)),
      activities: { shout: async (text: string) => `${text.toUpperCase()}!` },
    });
    const result = await worker.runUntil(
      env.client.workflow.execute(echoWorkflow, {
        taskQueue,
        workflowId: `echo-${taskQueue}`,
        args: ['hello'],
      }),
    );
    expect(result).toBe('HELLO!');
    const described = await env.client.workflow.getHandle(`echo-${taskQueue}`).describe();
    expect(described.typedSearchAttributes.get({ name: 'SyncStream', type: 'KEYWORD' } as never)).toBe(
      'echo',
    );
  });
});
