import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Typed search attributes on every window workflow, so on-call can find a window in the Temporal UI
 * (`SyncStream = "tickets" AND WindowStart >= "2026-01-01T00:00:00Z"`). They must be registered on
 * the namespace before use: the embedded dev server registers them at start (worker/embedded).
 */
export const SyncStreamKey = defineSearchAttributeKey('SyncStream', SearchAttributeType.KEYWORD);
export const WindowStartKey = defineSearchAttributeKey('WindowStart', SearchAttributeType.DATETIME);
export const WindowEndKey = defineSearchAttributeKey('WindowEnd', SearchAttributeType.DATETIME);
export const SyncRunIdKey = defineSearchAttributeKey('SyncRunId', SearchAttributeType.KEYWORD);

/**
 * The workspace of a run and of everything it starts (children, activities' headers), on a run of a
 * workspace of SYNC_WORKSPACES_FILE; absent on the deployment's own workspace (`default`).
 */
export const WorkspaceKey = defineSearchAttributeKey('Workspace', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [SyncStreamKey, WindowStartKey, WindowEndKey, SyncRunIdKey, WorkspaceKey];

/** Set by Temporal on runs started by a schedule (not registered by us: a built-in attribute). */
export const TemporalScheduledStartTimeKey = defineSearchAttributeKey(
  'TemporalScheduledStartTime',
  SearchAttributeType.DATETIME,
);
