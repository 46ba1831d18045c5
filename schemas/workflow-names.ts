import { STREAMS, type StreamKind, type StreamName, type StreamRouteClass } from './streams.js';
import { DEFAULT_WORKSPACE } from './workspaces.js';

/** The names Temporal sees that the pipeline makes up: a route class's task queue, a window's workflow id. */

/**
 * The task queue of a route class: `<queue>-list`, `-detail`, `-analytics`, `-directory`. Activities that
 * make requests of that class run there, so each class has its own activity slots; the key's budget
 * workflow paces them (docs/design/rate-budget.md).
 */
export function classTaskQueue(taskQueue: string, routeClass: StreamRouteClass) {
  return `${taskQueue}-${routeClass}`;
}

/** `<stream>/<from>/<before>`: the window workflow id on-call searches for. */
export function windowWorkflowId(pass: string, from: string, before: string): string {
  return `${pass}/${from}/${before}`;
}

/**
 * A workflow id in its workspace: `<workspace>/<id>` (ids of windows repeat across workspaces), the id
 * itself in the deployment's own workspace.
 */
export function workspaceWorkflowId(workspace: string, id: string): string {
  return workspace === DEFAULT_WORKSPACE ? id : `${workspace}/${id}`;
}

/**
 * The kinds of stream the run reads itself, with no child workflow of their own (workflows/run/in-run.ts):
 * their windows are in `_sync_runs` under `<stream>/<from>/<before>`, their activities in their run's history.
 */
const KINDS_READ_BY_THE_RUN: ReadonlySet<StreamKind> = new Set(['reference', 'report']);

/** Whether a window of this stream is read by its run itself (no workflow of that id exists). */
export function isReadByTheRun(stream: string): boolean {
  const facts = (STREAMS as Partial<Record<string, { kind: StreamKind }>>)[stream as StreamName];
  return facts !== undefined && KINDS_READ_BY_THE_RUN.has(facts.kind);
}
