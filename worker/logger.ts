import pino, { type Logger } from 'pino';
import type { Secret } from '../schemas/secret.js';
import { withSerializedErrors } from './log-errors.js';

/**
 * One pino logger for the process, to stderr (stdout is reserved for machine-readable output such as the
 * sync summary line). Temporal's native runtime logs through it at warn and above (worker/temporal-runtime.ts).
 * Every error in a line keeps its message, scrubbed of `secrets` and cut (worker/log-errors.ts).
 */
export function createLogger(level: string, secrets: readonly Secret[] = []): Logger {
  return pino(
    {
      level,
      base: null,
      formatters: { log: (object) => withSerializedErrors(object, secrets) },
      // The errors are plain JSON by now: pino's own `err` serializer would retype them as `Object`.
      serializers: { err: (value: unknown) => value },
    },
    pino.destination(2),
  );
}
