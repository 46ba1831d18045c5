/** Public surface of the Support API v1 source connector. */
export { currentCancellation, withCancellation } from './cancellation.js';
export {
  API_PREFIX,
  type ApiRequest,
  type ApiResponse,
  DEADLINE_EXCEEDED,
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_REQUEST_DEADLINE_MS,
  type RetryPolicy,
  SupportApiClient,
  type SupportApiClientOptions,
} from './client.js';
export { type Clock, systemClock } from './clock.js';
export {
  CursorLoopError,
  CursorRejectedError,
  describeFailure,
  type Endpoint,
  type FailureDescription,
  isRetryable,
  RateLimitedError,
  RedirectRefusedError,
  ResponseFormatError,
  ResponseTooLargeError,
  retryDelayMs,
  type SchemaIssue,
  SchemaViolationError,
  SupportApiError,
  SupportClientError,
  TransportError,
  UploadError,
} from './errors.js';
export {
  type FleetObservation,
  type FleetSlotSource,
  FleetSlots,
} from './fleet-slots.js';
export {
  type AgentSessionsPageRequest,
  type CsatPageRequest,
  fetchAgentSessionsPage,
  fetchAgentsPage,
  fetchCsatPage,
  fetchMessagesPage,
  fetchMetricCatalog,
  fetchPageAfter,
  fetchTagsPage,
  fetchTeamsPage,
  fetchTicketsPage,
  fetchViewsPage,
  type Instant,
  type MessagesPageRequest,
  type Page,
  type PageRequest,
  type TicketsPageRequest,
} from './paginate.js';
export { type InvalidItem, MAX_REJECTED_KEPT, TOO_DEEP_REASON } from './parse.js';
export {
  type AcquireOptions,
  type ClampedWait,
  capServerWaits,
  GovernorRegistry,
  keyFingerprint,
  type ObservedResponse,
  type RateClassStats,
  type RateDecision,
  type RateDecisionReason,
  RateGovernor,
  type RateGovernorOptions,
  SERVER_WAIT_CAP_WINDOWS,
  sharedGovernors,
} from './rate-governor.js';
export { countRequests } from './request-count.js';
export {
  classifierOf,
  ROUTE_CLASSES,
  ROUTES,
  type RouteClass,
  type Routes,
  routeClassFor,
  SPEC_LIMITS,
  streamRoutes,
} from './route-classes.js';
export {
  type Scrubber,
  SERVER_TEXT_LIMITS,
  serverText,
  terminalJson,
  terminalLines,
} from './server-text.js';
export { type PlanOptions, planWindows, type Window, windowLengthMs } from './windows.js';
