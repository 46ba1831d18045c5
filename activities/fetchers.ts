import { type Fetcher, pageFetcher, windowPageFetcher } from '../connectors/support-api/stream-pages.js';
import type { ExportPass, StreamOfKind } from '../schemas/streams.js';
import { STREAMS } from '../schemas/streams.js';
import type { ListRead, ThreadRead, WindowRead } from '../streams/define.js';

export type { ListRead, ThreadRead, WindowRead } from '../streams/define.js';
export { THREAD_PAGE_LIMIT } from '../streams/ticket-messages.js';

/** Streams whose list comes whole in one unpaginated answer: one request per run, whatever the page size. */
export const UNPAGINATED_STREAMS: readonly StreamOfKind<'reference'>[] = Object.values(STREAMS).flatMap(
  (s) => (s.kind === 'reference' && 'unpaginated' in s && s.unpaginated ? [s.name] : []),
);

/** A fetcher for every paged stream of the registry (exports: for every pass), with what its kind reads. */
type PageFetchers = { readonly [S in StreamOfKind<'reference' | 'tickets'>]: Fetcher<ListRead> } & {
  readonly [P in ExportPass]: Fetcher<WindowRead>;
} & { readonly [S in StreamOfKind<'threads'>]: Fetcher<ThreadRead> };

/**
 * The stream-specific part of the page path (activities/sync-page.ts): which endpoint a stream's page
 * comes from, with which parameters — built from each stream's endpoint and page (streams/<name>.ts), an
 * export's by pass.
 */
export const PAGE_FETCHERS = Object.fromEntries(
  Object.values(STREAMS).flatMap((stream): [string, Fetcher<never>][] => {
    if (stream.kind === 'export') {
      return Object.entries(stream.passDefinitions).map(([pass, definition]) => [
        pass,
        windowPageFetcher(stream.endpoint, definition.page),
      ]);
    }
    if (!('page' in stream)) return [];
    const unpaginated = 'unpaginated' in stream && stream.unpaginated === true;
    return [[stream.name, pageFetcher(stream.endpoint, stream.page as never, { unpaginated })]];
  }),
) as unknown as PageFetchers;
