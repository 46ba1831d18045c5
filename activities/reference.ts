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
import type { ActivityDeps } from './deps.js';
import { fetchPageStep, rejectedOf, rowsOf } from './page-step.js';

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

/** One page of a reference stream, written with its checkpoint (invalid items set aside in `_rejected`). */
export function syncReferencePage(deps: ActivityDeps) {
  return async (input: {
    stream: ReferenceStream;
    scope: string;
    pageSize: number;
    allowRestart?: boolean;
    repair?: boolean;
  }) => {
    const { destination } = deps;
    const previous = await destination.readCheckpoint(input.stream, input.scope);
    if (previous?.status === 'complete')
      return { rows: 0, rejected: 0, done: true, cursorTag: null, restarted: false };
    const step = await fetchPageStep(deps, {
      stream: input.stream,
      scope: input.scope,
      cursor: previous?.cursor ?? null,
      allowRestart: input.allowRestart ?? true,
      fetch: fetcherFor(deps, input.stream, input.pageSize),
    });
    const { page, restarted } = step;
    const rejected = rejectedOf(input.stream, input.stream, input.scope, step);
    const result = await destination.writeBatch({
      table: input.stream,
      rows: rowsOf(page) as never,
      checkpoint: nextCheckpoint(restarted ? null : previous, {
        stream: input.stream,
        scope: input.scope,
        cursor: page.nextCursor,
        done: !page.hasMore,
        rows: page.items.length,
      }),
      rejected,
      repair: input.repair === true,
    });
    return {
      rows: result.received,
      rejected: rejected.length,
      done: !page.hasMore,
      cursorTag: step.nextCursorTag,
      restarted,
    };
  };
}
