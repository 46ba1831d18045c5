import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The signal that cancels every request made on behalf of one unit of work (an activity: its cancellation
 * signal, which fires when Temporal cancels it or its timeout passes; a preflight probe: its bound), however
 * deep in the call the request is made: an aborted request releases its socket and its rate slot at once
 * instead of holding them until the server lets go.
 */
const scope = new AsyncLocalStorage<AbortSignal>();

export function withCancellation<R>(signal: AbortSignal, work: () => Promise<R>): Promise<R> {
  const outer = scope.getStore();
  return scope.run(outer ? AbortSignal.any([outer, signal]) : signal, work);
}

/** The signal of the unit of work this call runs in, if any. */
export function currentCancellation(): AbortSignal | undefined {
  return scope.getStore();
}
