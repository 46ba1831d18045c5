export type { RequestLogEntry } from './http/app.js';
export type { FaultKind, FaultOptions } from './http/faults.js';
export { DEFAULT_LIMITS, ROUTE_CLASSES, type RouteClass } from './http/rate-limit.js';
export type {
  CompanionOptions,
  RuntimeOptions,
  ServiceOptions,
  WorkspaceOptions,
  WorkspacesOptions,
} from './options.js';
export {
  type CompanionHandle,
  MAX_WORKSPACES,
  startCompanion,
  startWorkspaces,
  type WorkspaceHandle,
  type WorkspacesHandle,
} from './server.js';
export * from './world/index.js';
