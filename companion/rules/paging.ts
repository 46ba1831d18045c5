import type { RequestContext } from '../http/context.js';
import type { CursorBinding, CursorPosition } from '../http/cursor.js';
import { validation } from '../http/errors.js';
import type { CompanionState } from '../state.js';
import type { ApiKeyRecord } from '../world/index.js';

export function binding(
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
export function decodeKeyset(
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

export function pageReply(
  s: CompanionState,
  b: CursorBinding,
  data: unknown[],
  hasMore: boolean,
  lastPos: CursorPosition | null,
  extra: Record<string, unknown> = {},
) {
  return {
    status: 200,
    body: {
      success: true,
      data,
      pagination: {
        has_more: hasMore,
        next_cursor: hasMore && lastPos !== null ? s.cursors.encode(b, lastPos) : null,
      },
      ...extra,
    },
  };
}

export type { RequestContext };
