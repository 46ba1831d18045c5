import { AsyncLocalStorage } from 'node:async_hooks';
import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { DEFAULT_WORKSPACE, WORKSPACE_HEADER } from '../schemas/workspaces.js';

const current = new AsyncLocalStorage<string>();

/**
 * The workspace of the activity running here: the `workspace` header its workflow gave it
 * (workflows/workspace-interceptors.ts); the deployment's own outside an activity, or for an activity
 * scheduled without the header.
 */
export function currentWorkspace(): string {
  return current.getStore() ?? DEFAULT_WORKSPACE;
}

/** Every worker's activity interceptor: each activity runs in its workspace (`currentWorkspace()`). */
export const workspaceActivityInterceptors: ActivityInterceptorsFactory = () => ({
  inbound: {
    execute(input, next) {
      const header = input.headers[WORKSPACE_HEADER];
      const workspace = header ? defaultPayloadConverter.fromPayload<string>(header) : DEFAULT_WORKSPACE;
      return current.run(workspace, () => next(input));
    },
  },
});
