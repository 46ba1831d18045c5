import type { Destination } from '../../connectors/destination.js';

/**
 * `destination`, whose staged `writeTables` (the page path's write) fails on its `n`-th call (1-based), once,
 * as a warehouse that goes away mid-run does; every other member is the destination's own.
 */
export function failingStagedWriteAt(
  destination: Destination,
  n: number,
): { destination: Destination; calls: () => number } {
  let calls = 0;
  const failing = new Proxy(destination, {
    get(t, prop) {
      if (prop === 'writeTables') {
        const write = t.writeTables.bind(t) as (...args: unknown[]) => Promise<unknown>;
        return async (...args: unknown[]) => {
          const staged = args[2] !== undefined;
          if (staged) calls += 1;
          if (staged && calls === n) throw new Error('the warehouse went away');
          return write(...args);
        };
      }
      const v = Reflect.get(t, prop, t);
      return typeof v === 'function' ? v.bind(t) : v;
    },
  });
  return { destination: failing, calls: () => calls };
}
