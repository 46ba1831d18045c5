import {
  fetchAgentsPage,
  fetchMetricCatalog,
  fetchTagsPage,
  fetchTeamsPage,
  fetchViewsPage,
  type Page,
} from '../connectors/support-api/index.js';
import type { ReferenceStream } from '../schemas/sync.js';
import { nextCheckpoint } from './checkpoints.js';
import { fetchWithRestart } from './cursor-restart.js';
import type { ActivityDeps } from './deps.js';
import { rowsOf } from './rows.js';

type AnyPage = Page<unknown, unknown>;

function fetcherFor(deps: ActivityDeps, stream: ReferenceStream, pageSize: number) {
  const { client } = deps;
  const req = (cursor: string | null) => ({ cursor, limit: pageSize });
  const fetchers: Record<ReferenceStream, (cursor: string | null) => Promise<AnyPage>> = {
    views: (c) => fetchViewsPage(client, req(c)),
    tags: (c) => fetchTagsPage(client, req(c)),
    teams: (c) => fetchTeamsPage(client, req(c)),
    agents: (c) => fetchAgentsPage(client, req(c)),
    metric_catalog: () => fetchMetricCatalog(client),
  };
  return fetchers[stream];
}

/** One page of a reference stream, written with its checkpoint. */
export function syncReferencePage(deps: ActivityDeps) {
  return async (input: { stream: ReferenceStream; scope: string; pageSize: number }) => {
    const { destination, logger } = deps;
    const previous = await destination.readCheckpoint(input.stream, input.scope);
    if (previous?.status === 'complete') return { rows: 0, done: true };
    const { page, restarted } = await fetchWithRestart(
      logger,
      `${input.stream} ${input.scope}`,
      previous?.cursor ?? null,
      fetcherFor(deps, input.stream, input.pageSize),
    );
    const base = restarted ? null : previous;
    const result = await destination.writeBatch({
      table: input.stream,
      rows: rowsOf(page) as never,
      checkpoint: nextCheckpoint(base, {
        stream: input.stream,
        scope: input.scope,
        cursor: page.nextCursor,
        done: !page.hasMore,
        rows: page.items.length,
      }),
    });
    return { rows: result.received, done: !page.hasMore };
  };
}
