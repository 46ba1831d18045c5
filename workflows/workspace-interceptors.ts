import type { SearchAttributePair } from '@temporalio/common';
import {
  type ActivityInput,
  type ChildWorkflowOptions,
  defaultPayloadConverter,
  type GetLogAttributesInput,
  type Next,
  type StartChildWorkflowExecutionInput,
  type WorkflowInterceptors,
  type WorkflowOutboundCallsInterceptor,
  workflowInfo,
} from '@temporalio/workflow';
import { workspaceWorkflowId } from '../schemas/workflow-names.js';
import { DEFAULT_WORKSPACE, WORKSPACE_HEADER } from '../schemas/workspaces.js';
import { WorkspaceKey } from './search-attributes.js';

/**
 * How a run's workspace reaches everything the run starts, in one place rather than in every lane: the
 * run carries it as its `Workspace` search attribute (set where it is started, kept by continue-as-new), and
 * this interceptor gives each child the same attribute and a workflow id of its own workspace
 * (`<workspace>/<id>`: ids of windows repeat across workspaces), each child and activity its workspace as
 * its fairness key (dispatch shared fairly between workspaces within a priority), and each activity a
 * `workspace` header, which the worker's activity interceptor turns into that workspace's API client and
 * destination (worker/workspace-context.ts). A run without the attribute is the deployment's own
 * workspace: ids and children exactly as a deployment of one workspace has them. (A window the run reads
 * itself is named in the ledger the same way: workflows/run/in-run.ts.)
 */
export function workspaceOfRun(): string {
  return workflowInfo().typedSearchAttributes.get(WorkspaceKey) ?? DEFAULT_WORKSPACE;
}

/** A child's workflow id in its workspace (the same for its start and for signals to it). */
const childWorkflowId = workspaceWorkflowId;

function pairsOf(attributes: ChildWorkflowOptions['typedSearchAttributes']): SearchAttributePair[] {
  if (attributes === undefined) return [];
  return Array.isArray(attributes) ? attributes : attributes.getAll();
}

class WorkspaceOutbound implements WorkflowOutboundCallsInterceptor {
  /** A run of another workspace than `default` names it in every line it logs (`log`, the SDK's own). */
  getLogAttributes(
    input: GetLogAttributesInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'getLogAttributes'>,
  ): Record<string, unknown> {
    const workspace = workspaceOfRun();
    return workspace === DEFAULT_WORKSPACE ? next(input) : { ...next(input), workspace };
  }

  scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
    const workspace = workspaceOfRun();
    return next({
      ...input,
      headers: { ...input.headers, [WORKSPACE_HEADER]: defaultPayloadConverter.toPayload(workspace) },
      options: {
        ...input.options,
        priority: { ...workflowInfo().priority, ...input.options.priority, fairnessKey: workspace },
      },
    });
  }

  startChildWorkflowExecution(
    input: StartChildWorkflowExecutionInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
  ) {
    const workspace = workspaceOfRun();
    if (workspace === DEFAULT_WORKSPACE) return next(input);
    const { options } = input;
    return next({
      ...input,
      options: {
        ...options,
        workflowId: childWorkflowId(workspace, options.workflowId),
        priority: { ...workflowInfo().priority, ...options.priority, fairnessKey: workspace },
        typedSearchAttributes: [
          ...pairsOf(options.typedSearchAttributes).filter((pair) => pair.key.name !== WorkspaceKey.name),
          { key: WorkspaceKey, value: workspace },
        ],
      },
    });
  }

  signalWorkflow(
    input: Parameters<NonNullable<WorkflowOutboundCallsInterceptor['signalWorkflow']>>[0],
    next: Next<WorkflowOutboundCallsInterceptor, 'signalWorkflow'>,
  ) {
    if (input.target.type !== 'child') return next(input);
    return next({
      ...input,
      target: {
        type: 'child',
        childWorkflowId: childWorkflowId(workspaceOfRun(), input.target.childWorkflowId),
      },
    });
  }
}

export const interceptors = (): WorkflowInterceptors => ({ outbound: [new WorkspaceOutbound()] });
