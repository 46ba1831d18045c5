import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rejectedOf, rowsOf } from '../../activities/page-step.js';
import { rejectedList } from '../../connectors/batch.js';
import { parsePage, TOO_DEEP_REASON } from '../../connectors/support-api/parse.js';
import { Ticket } from '../../schemas/api/tickets.js';
import {
  canonicalJson,
  JsonTooDeepError,
  jsonCutAt,
  jsonDeeperThan,
  MAX_JSON_DEPTH,
  storableJson,
  toValidatedRows,
} from '../../schemas/warehouse.js';
import { ticket } from '../destinations/fixtures.js';

/** `depth` arrays nested in one another, built (and later measured) without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

describe('JSON depth cap', () => {
  it('measures any depth without recursion: deeper than the limit exactly when it is', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 400 }), fc.integer({ min: 1, max: 300 }), (depth, limit) => {
        expect(jsonDeeperThan({ a: nested(depth) }, limit)).toBe(depth + 1 > limit);
      }),
    );
    expect(jsonDeeperThan(nested(200_000))).toBe(true);
    expect(jsonDeeperThan(nested(MAX_JSON_DEPTH))).toBe(false);
  });

  it('the walks of row building refuse a value past the cap by name, not with a stack overflow', () => {
    for (const walk of [storableJson, canonicalJson]) {
      expect(() => walk({ x: nested(4_000) })).toThrow(JsonTooDeepError);
      expect(() => walk(nested(MAX_JSON_DEPTH))).not.toThrow();
    }
    const cut = jsonCutAt({ keep: 1, x: nested(4_000) });
    expect(jsonDeeperThan(cut)).toBe(false);
    expect(canonicalJson(cut)).toContain(`nested deeper than ${MAX_JSON_DEPTH} levels: cut`);
  });

  it('a ticket nested 4,000 arrays deep is set aside with its reason; the rest of its page is stored', () => {
    const good = [ticket({ ticket_number: 1 }), ticket({ ticket_number: 3 })];
    const deep = { ...ticket({ ticket_number: 2 }), x_unknown: nested(4_000) };
    const broken = { ...ticket({ ticket_number: 4 }), status: 7, x_unknown: nested(4_000) };
    const answer = JSON.parse(
      JSON.stringify({
        success: true,
        data: [good[0], deep, good[1], broken],
        pagination: { has_more: false, next_cursor: null },
      }),
    );
    const page = { ...parsePage('/tickets', 200, answer, Ticket, undefined), cursor: 'c1', nextCursor: null };
    expect(page.items.map((t) => t.ticket_number)).toEqual([1, 3]);
    expect(page.rejected.map((r) => [r.index, r.itemId])).toEqual([
      [1, deep.id],
      [3, broken.id],
    ]);
    expect(page.rejected[0]!.reason).toBe(TOO_DEEP_REASON);
    expect(page.rejected[1]!.reason).toMatch(/status/);
    // The rows of the rest build; the set-aside items as `_rejected` stores them, cut at the cap.
    expect(toValidatedRows('tickets', rowsOf(page) as never)).toHaveLength(2);
    const step = { page, restarted: false, cursor: 'c1', nextCursorTag: null };
    const stored = rejectedList(rejectedOf('tickets', 'tickets', 'sweep', step));
    expect(stored.map((r) => r.itemId).sort()).toEqual([deep.id, broken.id].sort());
    for (const r of stored) expect(jsonDeeperThan(r.raw)).toBe(false);
  });
});
