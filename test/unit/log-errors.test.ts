import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { DestinationError } from '../../connectors/errors.js';
import { SupportApiError } from '../../connectors/support-api/errors.js';
import { Secret, Secrets } from '../../schemas/secret.js';
import { LOG_ERROR_TEXT_LIMIT } from '../../worker/log-errors.js';
import { createLogger } from '../../worker/logger.js';

const KEY = 'cx_live_LOGKEY_0123456789abcdef';

/** The process logger (worker/logger.ts) at `level`, on a sink the test reads. */
function logger(secrets: Secret[] = [], level = 'info') {
  const raw: string[] = [];
  const log = createLogger(level, new Secrets(secrets), { write: (l: string) => raw.push(l) });
  return {
    log,
    raw,
    get lines() {
      return raw.map((l) => JSON.parse(l) as Record<string, unknown>);
    },
  };
}

describe('every error in a log line keeps its message', () => {
  it("an error nested under any key (Temporal's `{ error }` meta) keeps type, message and cause", () => {
    const sink = logger();
    const { log } = sink;
    const err = new DestinationError('bigquery append: PERMISSION_DENIED on dataset d', {
      cause: new Error('grpc status 7'),
    });
    log.warn({ temporal: { error: err, durationMs: 12 } }, 'Activity failed');
    const logged = (sink.lines[0]!['temporal'] as { error: Record<string, unknown> }).error;
    expect(logged).toMatchObject({
      type: 'DestinationError',
      message: 'bigquery append: PERMISSION_DENIED on dataset d',
      cause: { type: 'Error', message: 'grpc status 7' },
    });
  });

  it('top-level err and a bare error too; the error JSON of the client is kept', () => {
    const sink = logger();
    const { log } = sink;
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
    const lines = sink.lines;
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
    const sink = logger([new Secret(KEY)]);
    const err = new Error(`${KEY} ${'x'.repeat(100_000)}`);
    (err as { cause?: unknown }).cause = err;
    sink.log.warn({ deep: { a: [{ error: err }] } }, 'secret');
    const lines = sink.lines;
    const text = JSON.stringify(lines[0]);
    expect(text).not.toContain(KEY);
    expect(text).toContain('[redacted]');
    const logged = (lines[0]!['deep'] as { a: [{ error: { message: string; stack: string } }] }).a[0].error;
    expect(logged.message.length).toBeLessThanOrEqual(LOG_ERROR_TEXT_LIMIT);
    expect(logged.stack.length).toBeLessThanOrEqual(LOG_ERROR_TEXT_LIMIT);
    expect(text.length).toBeLessThan(10 * LOG_ERROR_TEXT_LIMIT);
  });
});

describe('no shape of a log call writes a secret', () => {
  const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
  const TEMPORAL_KEY = 'tmprl_PROFILEKEY_fedcba9876543210';

  /** An error that names the key in every place an error can hold text. */
  function leakyError(key: string): Error {
    const err = new Error(`request to https://api.example/?key=${key} failed`, {
      // A cause that is no Error: a plain object, as some libraries reject with.
      cause: { message: `bad key ${key}`, detail: { header: `cx-api-key: ${key}` } },
    });
    // The error's own JSON, with the key inside nested strings.
    Object.assign(err, {
      toJSON: () => ({ endpoint: 'GET /x', request: { headers: [`cx-api-key: ${key}`] } }),
    });
    return err;
  }

  it('at every level: an Error first, {err} with its message, {err: message}, a plain cause, toJSON, interpolation, bindings, a URL, a key known later', () => {
    const secrets = new Secrets([new Secret(KEY)]);
    const raw: string[] = [];
    const log = createLogger('trace', secrets, { write: (l: string) => raw.push(l) });
    // The Temporal profile's key becomes known after the logger is made (embedded/temporal.ts).
    secrets.add(new Secret(TEMPORAL_KEY));
    for (const key of [KEY, TEMPORAL_KEY]) {
      for (const level of LEVELS) {
        const err = leakyError(key);
        log[level](err);
        log[level]({ err }, err.message);
        log[level]({ err: err.message }, 'fleet budget report not delivered');
        log[level]({ deep: [{ reason: err.cause }] }, 'plain cause');
        log[level]('interpolated %s and %o', key, { key });
        log[level](`message holding ${key}`);
        log[level]({ url: new URL(`https://api.example/?key=${key}`) }, 'a URL');
        log.child({ component: `client ${key}` })[level]('a child');
        log[level](new AggregateError([leakyError(key)], `all failed: ${key}`));
      }
    }
    expect(raw.length).toBe(2 * LEVELS.length * 9);
    const all = raw.join('');
    expect(all).not.toContain(KEY);
    expect(all).not.toContain(TEMPORAL_KEY);
    expect(all).toContain('[redacted]');
    // Nothing was dropped on the way: each line says what it was about.
    expect(all).toContain('fleet budget report not delivered');
    expect(all).toContain('https://api.example/?key=[redacted]');
  });

  it('a terminal escape or an invisible character in a message or field is written escaped, visibly', () => {
    const sink = logger();
    sink.log.warn({ field: 'evil\u001b[2J\u001b]0;PWNED\u0007', c1: 'x\u009by' }, 'odd \u202e text');
    const line = sink.raw[0]!.trimEnd();
    // biome-ignore lint/suspicious/noControlCharactersInRegex: what a line must not hold
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u202e]/);
    expect(sink.lines[0]).toMatchObject({
      field: 'evil\\u001b[2J\\u001b]0;PWNED\\u0007',
      c1: 'x\\u009by',
      msg: 'odd \\u202e text',
    });
  });
});
