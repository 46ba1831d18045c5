import { ApplicationFailure } from '@temporalio/common';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DestinationError } from '../../connectors/errors.js';
import { SupportApiError } from '../../connectors/support-api/errors.js';
import { Secret } from '../../schemas/secret.js';
import { LOG_ERROR_TEXT_LIMIT, withSerializedErrors } from '../../worker/log-errors.js';

const KEY = 'cx_live_LOGKEY_0123456789abcdef';

/** The process logger's options (worker/logger.ts) on a sink the test reads. */
function logger(secrets: Secret[] = []) {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    {
      base: null,
      formatters: { log: (o) => withSerializedErrors(o, secrets) },
      serializers: { err: (v: unknown) => v },
    },
    { write: (l: string) => lines.push(JSON.parse(l)) },
  );
  return { log, lines };
}

describe('every error in a log line keeps its message', () => {
  it("an error nested under any key (Temporal's `{ error }` meta) keeps type, message and cause", () => {
    const { log, lines } = logger();
    const err = new DestinationError('bigquery append: PERMISSION_DENIED on dataset d', {
      cause: new Error('grpc status 7'),
    });
    log.warn({ temporal: { error: err, durationMs: 12 } }, 'Activity failed');
    const logged = (lines[0]!['temporal'] as { error: Record<string, unknown> }).error;
    expect(logged).toMatchObject({
      type: 'DestinationError',
      message: 'bigquery append: PERMISSION_DENIED on dataset d',
      cause: { type: 'Error', message: 'grpc status 7' },
    });
  });

  it('top-level err and a bare error too; the error JSON of the client is kept', () => {
    const { log, lines } = logger();
    const api = new SupportApiError({
      endpoint: 'GET /public/v1/tickets',
      status: 503,
      code: 'UNAVAILABLE',
      message: 'down',
      requestId: 'req_9',
    });
    log.error({ err: api }, 'failed');
    log.error(new DestinationError('flush failed'), 'bare');
    log.warn({ failure: ApplicationFailure.create({ type: 'X', message: 'app failure' }) }, 'af');
    expect(lines[0]!['err']).toMatchObject({
      type: 'SupportApiError',
      message: 'GET /public/v1/tickets failed: HTTP 503 UNAVAILABLE: down (request_id req_9)',
      endpoint: 'GET /public/v1/tickets',
      requestId: 'req_9',
    });
    expect(lines[1]!['err']).toMatchObject({ type: 'DestinationError', message: 'flush failed' });
    expect(lines[2]!['failure']).toMatchObject({ type: 'ApplicationFailure', message: 'app failure' });
  });

  it('scrubbed of every secret and cut, stack included; cycles end', () => {
    const { log, lines } = logger([new Secret(KEY)]);
    const err = new Error(`${KEY} ${'x'.repeat(100_000)}`);
    (err as { cause?: unknown }).cause = err;
    log.warn({ deep: { a: [{ error: err }] } }, 'secret');
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain(KEY);
    expect(text).toContain('[redacted]');
    const logged = (lines[0]!['deep'] as { a: [{ error: { message: string; stack: string } }] }).a[0].error;
    expect(logged.message.length).toBeLessThanOrEqual(LOG_ERROR_TEXT_LIMIT);
    expect(logged.stack.length).toBeLessThanOrEqual(LOG_ERROR_TEXT_LIMIT);
    expect(text.length).toBeLessThan(10 * LOG_ERROR_TEXT_LIMIT);
  });
});
