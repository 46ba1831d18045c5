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

/**
 * The fields that name the workspace in a log line written here (the process logger's mixin,
 * worker/logger.ts): `{ workspace }` inside an activity of another workspace than the deployment's own, or
 * of `fallback` (the process's own workspace) outside one; nothing for the `default` workspace, whose
 * lines are as a deployment of one workspace writes them.
 */
export function workspaceLogFields(fallback: string = DEFAULT_WORKSPACE): { workspace?: string } {
  const workspace = current.getStore() ?? fallback;
  return workspace === DEFAULT_WORKSPACE ? {} : { workspace };
}

/**
 * Every worker's activity interceptor: each activity runs in its workspace (`currentWorkspace()`), and the
 * SDK's own lines of an activity of another workspace than `default` (its failures, through the runtime's
 * logger, worker/temporal-runtime.ts) name it.
 */
export const workspaceActivityInterceptors: ActivityInterceptorsFactory = () => {
  // One factory call per activity: the workspace its header names, for its lines written after it ran too.
  let workspace = DEFAULT_WORKSPACE;
  return {
    inbound: {
      execute(input, next) {
        const header = input.headers[WORKSPACE_HEADER];
        workspace = header ? defaultPayloadConverter.fromPayload<string>(header) : DEFAULT_WORKSPACE;
        return current.run(workspace, () => next(input));
      },
    },
    outbound: {
      getLogAttributes(input, next) {
        return workspace === DEFAULT_WORKSPACE ? next(input) : { ...next(input), workspace };
      },
    },
  };
};
