import { describe, expect, it } from 'vitest';
import { parsePage } from '../../connectors/support-api/parse.js';
import { Ticket } from '../../schemas/api/tickets.js';
import { canonicalJson, storableJson, toValidatedRows } from '../../schemas/warehouse.js';
import { ticket } from '../destinations/fixtures.js';

/** An item's keys are data: whatever a source names a member, it is stored as a member. */
describe('item keys that name parts of JavaScript objects', () => {
  const text = '{"__proto__":{"polluted":true},"constructor":"c","nested":[{"__proto__":"deep"}],"ok":1}';

  it('storableJson keeps `__proto__` as a member at every depth and never sets a prototype', () => {
    const copy = storableJson(JSON.parse(text)) as Record<string, unknown>;
    expect(Object.keys(copy)).toEqual(['__proto__', 'constructor', 'nested', 'ok']);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect((copy as { polluted?: unknown }).polluted).toBeUndefined();
    expect(JSON.stringify(copy)).toBe(text);
    expect(canonicalJson(copy)).toBe(canonicalJson(JSON.parse(text)));
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('a ticket with a `__proto__` member is stored with it in `_raw`', () => {
    const served = { ...ticket({ ticket_number: 5 }) } as Record<string, unknown>;
    const body = JSON.stringify({
      success: true,
      data: [served],
      pagination: { has_more: false, next_cursor: null },
    }).replace('{"id"', '{"__proto__":{"role":"admin"},"id"');
    const page = parsePage('/tickets', 200, JSON.parse(body), Ticket, undefined);
    expect(page.rejected).toEqual([]);
    const [row] = toValidatedRows('tickets', [{ item: page.items[0]!, raw: page.rawItems[0]! }] as never);
    const raw = row!['_raw'] as Record<string, unknown>;
    expect(Object.hasOwn(raw, '__proto__')).toBe(true);
    expect(Object.getOwnPropertyDescriptor(raw, '__proto__')?.value).toEqual({ role: 'admin' });
    expect(JSON.stringify(raw)).toContain('"__proto__":{"role":"admin"}');
    expect((raw as { role?: unknown }).role).toBeUndefined();
  });
});
