import { describe, expect, it } from 'vitest';
import { canonicalJson, rowContentHash, storableJson } from '../../schemas/warehouse.js';

/**
 * The walks every row's content goes through before it is stored (schemas/warehouse/values.ts): what they
 * produce must never move, since `_content_hash` values already stored are compared with new ones.
 */
describe('storable JSON and canonical JSON', () => {
  const value = {
    z: [3, -0, 1.5e-7, null, { b: 'é😀', a: 'line\n"q"\\' }],
    A: true,
    _raw: { id: 'x', __k: [] },
    ñ: {},
    '': 'empty',
    n: undefined,
  };

  it('canonical JSON and the content hash are the texts an earlier build stored', () => {
    // Taken from the implementation before the walk was rewritten (keys sorted by code unit, undefined
    // members dropped, -0 as 0): a change here would make every stored row look changed.
    const text =
      '{"":"empty","A":true,"_raw":{"__k":[],"id":"x"},"z":[3,0,1.5e-7,null,{"a":"line\\n\\"q\\"\\\\","b":"é😀"}],"ñ":{}}';
    expect(canonicalJson(value)).toBe(text);
    expect(rowContentHash(value)).toBe('55cd20d9ca587117e560e4bf43d13418c1ad69cca68e9ea02da27a644b356fd7');
    // Whatever order the keys came in.
    const reordered = {
      '': 'empty',
      ñ: {},
      z: [3, 0, 1.5e-7, null, { a: 'line\n"q"\\', b: 'é😀' }],
      _raw: { __k: [], id: 'x' },
      A: true,
    };
    expect(canonicalJson(reordered)).toBe(text);
  });

  it('a value storable as it is comes back as it is; one that is not is copied, the original untouched', () => {
    const parsed = JSON.parse('{"a":[1,{"b":"ok"}],"__proto__":{"c":null}}') as Record<string, unknown>;
    expect(storableJson(parsed)).toBe(parsed);
    for (const bad of ['nul\u0000here', 'lone \ud800 surrogate']) {
      const item = { a: [1, { b: bad }], keep: 'same' };
      const before = JSON.stringify(item);
      const stored = storableJson(item) as { a: [number, { b: string }]; keep: string };
      expect(stored).not.toBe(item);
      expect(stored.a[1].b).not.toContain('\u0000');
      expect(stored.a[1].b).toContain('\uFFFD');
      expect(stored.keep).toBe('same');
      expect(JSON.stringify(item)).toBe(before);
    }
    // A key that is not storable, a member left undefined, a number JSON cannot hold, an object that is
    // not plain: each copied into what JSON would store.
    expect(storableJson({ 'k\u0000': 1 })).toEqual({ 'k\uFFFD': 1 });
    expect(storableJson({ a: 1, b: undefined })).toEqual({ a: 1 });
    expect(storableJson({ a: [Number.NaN, Number.POSITIVE_INFINITY] })).toEqual({ a: [null, null] });
    const date = new Date(0);
    expect(storableJson({ at: date })).toEqual({ at: {} });
  });
});
