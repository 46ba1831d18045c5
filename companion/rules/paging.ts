import type { RequestContext } from '../http/context.js';
import type { CursorBinding, CursorPosition } from '../http/cursor.js';
import { validation } from '../http/errors.js';
import type { CompanionState } from '../state.js';
import type { ApiKeyRecord } from '../world/index.js';

function binding(
  route: string,
  key: ApiKeyRecord,
  filters: Record<string, string | number | undefined>,
): CursorBinding {
  const f: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(filters)) f[k] = v === undefined ? undefined : String(v);
  return {
    route,
    keyLabel: key.label,
    orgId: key.orgId,
    agentId: key.agentId,
    scopes: key.scopes === null ? '*' : [...key.scopes].sort().join(','),
    filters: f,
  };
}

/** Decodes a cursor and checks the position has the expected shape `[number, string]`. */
function decodeKeyset(
  s: CompanionState,
  b: CursorBinding,
  cursor: string | undefined,
): { at: number; id: string } | null {
  if (cursor === undefined) return null;
  const p: CursorPosition = s.cursors.decode(b, cursor);
  const [at, id] = p;
  if (typeof at !== 'number' || typeof id !== 'string') throw validation('cursor is malformed');
  return { at, id };
}

/** Compares (at, id) keys. */
export function cmpKey(aAt: number, aId: string, bAt: number, bId: string): number {
  return aAt - bAt || (aId < bId ? -1 : aId > bId ? 1 : 0);
}

type Created = { createdAt: number; id: string };
/** Creation order, (created_at, id) ascending: the order of views, tags, teams, agents and messages. */
export const byCreated = (a: Created, c: Created): number => cmpKey(a.createdAt, a.id, c.createdAt, c.id);
export const createdKey = (r: Created): CursorPosition => [r.createdAt, r.id];

/**
 * One list request's keyset page (spec 4.13/4.14 pagination rule 1, used by every list): the cursor is bound
 * to the route, the key and every filter including `limit`; `after` is the position it left off at (null on
 * the first page). Each list finds and orders its own records; `reply` cuts the page.
 */
export function keysetPage(
  s: CompanionState,
  route: string,
  key: ApiKeyRecord,
  filters: Record<string, string | number | undefined>,
  limit: number,
  cursor: string | undefined,
) {
  const b = binding(route, key, { ...filters, limit });
  const after = decodeKeyset(s, b, cursor);
  return {
    after,
    /** True for a record past the cursor; `sign` -1 for a list in descending order. */
    follows: (at: number, id: string, sign = 1): boolean =>
      !after || sign * cmpKey(at, id, after.at, after.id) > 0,
    /**
     * The reply for `matches`, in list order and past the cursor: the first `limit` are presented, and a next
     * cursor (the last one's key) is given when there are more; a list that stops early collects `limit + 1`.
     */
    reply<T>(
      matches: readonly T[],
      present: (r: T) => unknown,
      keyOf: (r: T) => CursorPosition,
      extra: Record<string, unknown> = {},
    ) {
      const page = matches.slice(0, limit);
      const last = page[page.length - 1];
      const hasMore = matches.length > limit;
      return {
        status: 200,
        body: {
          success: true,
          data: page.map(present),
          pagination: {
            has_more: hasMore,
            next_cursor: hasMore && last !== undefined ? s.cursors.encode(b, keyOf(last)) : null,
          },
          ...extra,
        },
      };
    },
  };
}

export type { RequestContext };
