import { fetchAgentSessionsPage, fetchCsatPage, type Page } from '../connectors/support-api/index.js';
import { type ExportPass, streamOfPass } from '../schemas/sync.js';
import { nextCheckpoint } from './checkpoints.js';
import { fetchWithRestart } from './cursor-restart.js';
import type { ActivityDeps } from './deps.js';
import { rowsOf } from './rows.js';

export interface ExportPageInput {
  pass: ExportPass;
  windowStart: string;
  windowEnd: string;
  pageSize: number;
  includeComments: boolean;
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

/** One page of an export window (analytics class), written with the window's checkpoint. */
export function syncExportPage(deps: ActivityDeps) {
  return async (input: ExportPageInput) => {
    const { destination, logger } = deps;
    const scope = `${input.windowStart}/${input.windowEnd}`;
    const previous = await destination.readCheckpoint(input.pass, scope);
    if (previous?.status === 'complete') return { rows: 0, done: true };
    const { page, restarted } = await fetchWithRestart(
      logger,
      `${input.pass} ${scope}`,
      previous?.cursor ?? null,
      fetcherFor(deps, input),
    );
    await destination.writeBatch({
      table: streamOfPass(input.pass),
      rows: rowsOf(page) as never,
      checkpoint: nextCheckpoint(restarted ? null : previous, {
        stream: input.pass,
        scope,
        cursor: page.nextCursor,
        done: !page.hasMore,
        rows: page.items.length,
      }),
    });
    return { rows: page.items.length, done: !page.hasMore };
  };
}
