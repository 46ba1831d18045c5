import { describe, expect, it } from 'vitest';
import { bearsTag, checkpointTagOf, cursorTagOf } from '../../connectors/cursor-tag.js';
import type { Checkpoint } from '../../schemas/warehouse.js';

const held: Checkpoint = {
  stream: 'exports',
  scope: 'w1',
  cursor: 'p2',
  high_water_mark: null,
  status: 'running',
  pages: 2,
  rows: 40,
  updated_at: '2026-01-01T00:00:00.000Z',
};

describe('bearsTag: the one tag a caller passes to readCheckpoint', () => {
  it('a checkpoint bears the tag of its cursor (a page report) and of itself (a listing)', () => {
    expect(bearsTag(held, cursorTagOf('p2'))).toBe(true);
    expect(bearsTag(held, checkpointTagOf(held))).toBe(true);
  });

  it('not the tag of another cursor, nor of the same scope written since', () => {
    expect(bearsTag(held, cursorTagOf('p1'))).toBe(false);
    // Written since the listing: same cursor, one more page — the listing's tag no longer matches …
    const listed = checkpointTagOf({ ...held, pages: 1, updated_at: '2025-12-31T23:00:00.000Z' });
    expect(bearsTag(held, listed)).toBe(false);
    // … and a completed entry with no cursor bears no cursor's tag, not even the empty one's.
    const done = { ...held, cursor: null, status: 'complete' as const };
    expect(bearsTag(done, cursorTagOf(''))).toBe(false);
    expect(bearsTag(done, checkpointTagOf(held))).toBe(false);
  });
});
