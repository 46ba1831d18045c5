import { fetchAgentSessionsPage, fetchCsatPage, type Page } from '../connectors/support-api/index.js';
import { type ExportPass, streamOfPass } from '../schemas/sync.js';
import { nextCheckpoint } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';
import { fetchPageStep, rejectedOf, rowsOf } from './page-step.js';

export interface ExportPageInput {
  pass: ExportPass;
  windowStart: string;
  windowEnd: string;
  pageSize: number;
  includeComments: boolean;
  allowRestart?: boolean;
  /** Full refresh: rows are rewritten at an equal version too (see WriteBatch.repair). */
  repair?: boolean;
}

function fetcherFor(
  deps: ActivityDeps,
  input: ExportPageInput,
): (cursor: string | null) => Promise<Page<unknown, unknown>> {
  const window = { from: input.windowStart, before: input.windowEnd, limit: input.pageSize };
  switch (input.pass) {
    case 'csat_surveys.sent':
      return (cursor) =>
        fetchCsatPage(deps.client, { ...window, cursor, by: 'sent', includeComments: input.includeComments });
    case 'csat_surveys.submitted':
      return (cursor) =>
        fetchCsatPage(deps.client, {
          ...window,
          cursor,
          by: 'submitted',
          includeComments: input.includeComments,
        });
    case 'agent_sessions':
      return (cursor) => fetchAgentSessionsPage(deps.client, { ...window, cursor });
  }
}

/**
 * One page of an export window (analytics class), written with the window's checkpoint; items that break
 * the spec's strict rules are set aside in `_rejected` (a later run re-reads their window).
 */
export function syncExportPage(deps: ActivityDeps) {
  return async (input: ExportPageInput) => {
    const { destination } = deps;
    const scope = `${input.windowStart}/${input.windowEnd}`;
    const previous = await destination.readCheckpoint(input.pass, scope);
    if (previous?.status === 'complete')
      return { rows: 0, rejected: 0, done: true, cursorTag: null, restarted: false };
    const step = await fetchPageStep(deps, {
      stream: input.pass,
      scope,
      cursor: previous?.cursor ?? null,
      allowRestart: input.allowRestart ?? true,
      fetch: fetcherFor(deps, input),
    });
    const { page, restarted } = step;
    const table = streamOfPass(input.pass);
    const rejected = rejectedOf(table, input.pass, scope, step);
    await destination.writeBatch({
      table,
      rows: rowsOf(page) as never,
      checkpoint: nextCheckpoint(restarted ? null : previous, {
        stream: input.pass,
        scope,
        cursor: page.nextCursor,
        done: !page.hasMore,
        rows: page.items.length,
      }),
      rejected,
      repair: input.repair === true,
    });
    return {
      rows: page.items.length,
      rejected: rejected.length,
      done: !page.hasMore,
      cursorTag: step.nextCursorTag,
      restarted,
    };
  };
}
