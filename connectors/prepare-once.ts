import type { DestinationSchema } from './destination.js';

const prepared = new WeakMap<DestinationSchema, Promise<void>>();

/**
 * `destination.prepare()` once per destination object in this process: the preflight of `sync --once` and
 * the first run its worker begins share one (the DDL is idempotent, but each pass is a round of catalogue
 * reads on the run's critical path). A failed prepare is forgotten, so the next caller tries again.
 */
export function prepareOnce(destination: DestinationSchema): Promise<void> {
  let once = prepared.get(destination);
  if (!once) {
    once = destination.prepare().catch((err: unknown) => {
      prepared.delete(destination);
      throw err;
    });
    prepared.set(destination, once);
  }
  return once;
}
