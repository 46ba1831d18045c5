import { WarehouseRowError } from '../schemas/warehouse.js';

/** An error from a destination. The message never contains credentials. */
export class DestinationError extends Error {
  override readonly name = 'DestinationError';
}

/**
 * Runs `fn` on behalf of a destination operation named `context`; whatever it throws leaves as the error
 * callers see. The one try→fail of a destination: every operation goes through it, so none can forget to
 * scrub a credential.
 */
export type WithErrorMapping = <T>(context: string, fn: () => Promise<T>) => Promise<T>;

export interface ErrorMappingOptions {
  /** Removes whatever a driver's message might hold that is a credential (passwords, URLs, tokens). */
  readonly scrub: (text: string) => string;
  /** Keep the driver's error `code` (PostgreSQL's SQLSTATE) on the mapped error. */
  readonly keepCode: boolean;
}

/**
 * The error mapping of one destination. Row errors and our own DestinationErrors pass unchanged (they are
 * already what callers should see); anything else becomes a DestinationError `<context>: <message>`,
 * scrubbed. None is marked non-retryable: a failing warehouse is retried with backoff (activities/failures.ts).
 */
export function errorMapping(options: ErrorMappingOptions): WithErrorMapping {
  const mapped = (context: string, err: unknown): Error => {
    if (err instanceof WarehouseRowError || err instanceof DestinationError) return err;
    const e = err as { message?: string; code?: unknown };
    const wrapped = new DestinationError(options.scrub(`${context}: ${e.message ?? String(err)}`));
    if (options.keepCode && e.code) Object.assign(wrapped, { code: e.code });
    return wrapped;
  };
  return async (context, fn) => {
    try {
      return await fn();
    } catch (err) {
      throw mapped(context, err);
    }
  };
}
