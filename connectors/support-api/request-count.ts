import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Counts the HTTP requests made on behalf of one unit of work (an activity), retries included, however many
 * units share the client at once: the ledger records what was really sent, not pages.
 */
const scope = new AsyncLocalStorage<{ requests: number }>();

export async function countRequests<R>(work: () => Promise<R>, counter = { requests: 0 }) {
  const result = await scope.run(counter, work);
  return { result, requests: counter.requests };
}

/** Called by the client for every request it sends (each attempt). */
export function noteRequestSent(): void {
  const counter = scope.getStore();
  if (counter) counter.requests += 1;
}
