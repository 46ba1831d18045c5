import pino, { type Logger } from 'pino';

/**
 * One pino logger for the process, to stderr (stdout is reserved for machine-readable output such as the
 * sync summary line). Temporal's native runtime logs through it at warn and above (worker/temporal-runtime.ts).
 */
export function createLogger(level: string): Logger {
  return pino({ level, base: null }, pino.destination(2));
}
