import type { PageSpec, WindowPageSpec, WindowRead } from '../../streams/define.js';
import type { SupportApiClient } from './client.js';
import { fetchPage, fetchWholeList, type Page, windowQuery } from './paginate.js';

/** One page of a stream (or an export pass) from the API, with what its kind reads. */
export type Fetcher<R> = (
  client: SupportApiClient,
  read: R,
  cursor: string | null,
) => Promise<Page<unknown, unknown>>;

/**
 * The path of `endpoint` for one read: each `:name` segment is the read's field of that name, a positive
 * whole number or a non-empty string (URL-encoded), and anything else is refused before any request.
 */
export function pathOf(endpoint: `${string} /${string}`, read: object): string {
  const [method, path] = endpoint.split(' ') as [string, string];
  if (method !== 'GET') throw new TypeError(`${endpoint}: a page is read by GET only`);
  return path.replace(/:([A-Za-z]\w*)/g, (_, name: string) => {
    const value = (read as Record<string, unknown>)[name];
    const valid =
      (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) ||
      (typeof value === 'string' && value.length > 0);
    if (!valid) throw new TypeError(`${endpoint}: invalid ${name} ${JSON.stringify(value) ?? 'undefined'}`);
    return encodeURIComponent(String(value));
  });
}

/** The page size a read asks for: the stream's own, else the read's; within what the endpoint takes. */
function limitOf(endpoint: string, spec: PageSpec<never>, read: object): number | undefined {
  const limit = spec.limit ?? (read as { limit?: number }).limit;
  if (limit !== undefined && spec.maxLimit !== undefined && limit > spec.maxLimit)
    throw new RangeError(`${endpoint}: a page of ${limit} items is more than the ${spec.maxLimit} it serves`);
  return limit;
}

/** The fetcher of a whole list's, or a thread's, page (`unpaginated`: one answer holds the whole list). */
export function pageFetcher<R extends object>(
  endpoint: `${string} /${string}`,
  spec: PageSpec<R>,
  options: { readonly unpaginated?: boolean } = {},
): Fetcher<R> {
  if (options.unpaginated) return (client, read) => fetchWholeList(client, pathOf(endpoint, read), spec.item);
  return async (client, read, cursor) => {
    const limit = limitOf(endpoint, spec as PageSpec<never>, read);
    return fetchPage(
      client,
      pathOf(endpoint, read),
      limit === undefined ? { cursor } : { cursor, limit },
      { ...spec.query?.(read) },
      spec.item,
      spec.meta,
    );
  };
}

/** The fetcher of an export pass's page: its window under the endpoint's names, then the spec's query. */
export function windowPageFetcher(
  endpoint: `${string} /${string}`,
  spec: WindowPageSpec,
): Fetcher<WindowRead> {
  return pageFetcher(endpoint, {
    ...spec,
    query: (read) => ({
      ...(windowQuery(read, spec.window) as Record<string, string>),
      ...spec.query?.(read),
    }),
  });
}
