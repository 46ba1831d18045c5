import type { Destination } from '../../connectors/destination.js';

/**
 * The suite's destination in shared tables, with a neighbour: every batch the suite writes (`mirrored`:
 * the calls that write) is written first by another workspace into the same tables — the same ids, keys
 * and checkpoints — so a key without `workspace_id` would make the suite's inserts updates or no-ops, and
 * its reads see two rows. The neighbour never deletes: none of its rows may be marked deleted by the
 * suite's deletions and cascades.
 */
export function withNeighbour(
  dest: Destination,
  neighbour: Destination,
  mirrored: readonly PropertyKey[] = ['writeTables'],
): Destination {
  const writes = new Set<PropertyKey>(mirrored);
  return new Proxy(dest, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      if (!writes.has(name)) return value.bind(target);
      return async (...args: unknown[]) => {
        // A batch the suite expects to be refused is refused for the neighbour too; the suite checks how.
        await (Reflect.get(neighbour, name) as (...a: unknown[]) => Promise<unknown>)
          .apply(neighbour, args)
          .catch(() => undefined);
        return value.apply(target, args);
      };
    },
  });
}

/** `dest` with its `prepare` replaced by `prepare` (which prepares a neighbour too, or records its runs). */
export function withPrepare(dest: Destination, prepare: () => Promise<void>): Destination {
  return new Proxy(dest, {
    get: (target, name) => {
      if (name === 'prepare') return prepare;
      const value = Reflect.get(target, name);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
