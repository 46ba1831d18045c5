import { describe, expect, it } from 'vitest';
import { intervalOf } from '../../cli/commands/schedule.js';

describe("a workspace's phase in its schedule's interval", () => {
  it('is stable per id, inside the interval, in whole seconds; the default workspace keeps the boundary', () => {
    expect(intervalOf('PT1H', 'default')).toEqual({ every: 3_600_000 });
    const acme = intervalOf('PT1H', 'acme');
    expect(intervalOf('PT1H', 'acme')).toEqual(acme);
    expect(acme.offset ?? 0).toBeGreaterThanOrEqual(0);
    expect(acme.offset ?? 0).toBeLessThan(3_600_000);
    expect((acme.offset ?? 0) % 1000).toBe(0);
  });

  it("spreads a fleet's workspaces over the interval instead of its boundary", () => {
    const every = 3_600_000;
    const offsets = Array.from({ length: 1000 }, (_, i) => intervalOf('PT1H', `ws-${i}`).offset ?? 0);
    // Per 6-minute tenth of the hour: a uniform spread puts 100 in each; none may hold a crowd.
    const tenths = Array.from({ length: 10 }, () => 0);
    for (const o of offsets) tenths[Math.floor((o / every) * 10)]! += 1;
    for (const n of tenths) expect(n).toBeGreaterThan(60);
    for (const n of tenths) expect(n).toBeLessThan(140);
    // 1,000 ids over 3,600 seconds share some seconds (~873 distinct expected of a uniform hash), not many.
    expect(new Set(offsets).size).toBeGreaterThan(820);
  });
});
