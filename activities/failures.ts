import { ApplicationFailure } from '@temporalio/activity';
import {
  RateLimitedError,
  SchemaViolationError,
  SupportApiError,
  SupportClientError,
} from '../connectors/support-api/index.js';

/**
 * Turns what an activity threw into the failure Temporal should see:
 *  - a 429 (or the governor's "wait longer than we sleep in-process") → retryable `RateLimited` with
 *    `nextRetryDelay` = Retry-After, so the retry comes exactly when the budget is back (no tight loop);
 *  - API errors retrying cannot fix (401, 403, 404, 400 validation) and schema violations → non-retryable,
 *    with the API's `code` and `request_id` in the message and details;
 *  - everything else (5xx, network, timeouts, a busy database) → rethrown, retried with backoff.
 * Messages come from the client's typed errors, which never contain the API key.
 */
export function toFailure(err: unknown): unknown {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof RateLimitedError) {
    return ApplicationFailure.create({
      type: 'RateLimited',
      message: err.message,
      nextRetryDelay: Math.max(1, err.retryAfterMs),
      details: [{ routeClass: err.routeClass, retryAfterMs: err.retryAfterMs }],
    });
  }
  if (err instanceof SupportApiError && !err.retryable) {
    return ApplicationFailure.create({
      type: err.code,
      message: err.message,
      nonRetryable: true,
      details: [{ status: err.status, code: err.code, requestId: err.requestId, endpoint: err.endpoint }],
    });
  }
  if (err instanceof SchemaViolationError) {
    return ApplicationFailure.create({ type: 'SchemaViolation', message: err.message, nonRetryable: true });
  }
  if (err instanceof SupportClientError && !err.retryable) {
    return ApplicationFailure.create({ type: err.name, message: err.message, nonRetryable: true });
  }
  if (err instanceof Error && (err as { nonRetryable?: boolean }).nonRetryable === true) {
    return ApplicationFailure.create({ type: err.name, message: err.message, nonRetryable: true });
  }
  return err;
}

/** Wraps an activity so every failure goes through `toFailure`. */
export function mapFailures<A extends unknown[], R>(
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (err) {
      throw toFailure(err);
    }
  };
}
