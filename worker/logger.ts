import { DefaultLogger, type LogLevel, Runtime } from '@temporalio/worker';
import pino, { type Logger } from 'pino';

/**
 * One pino logger for the process, to stderr (stdout is reserved for machine-readable output such as the
 * sync summary line). Temporal's native runtime logs through it at warn and above.
 */
export function createLogger(level: string): Logger {
  return pino({ level, base: null }, pino.destination(2));
}

let runtimeInstalled = false;
export function installTemporalRuntimeLogger(logger: Logger): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const levels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
    TRACE: 'trace',
    DEBUG: 'debug',
    INFO: 'info',
    WARN: 'warn',
    ERROR: 'error',
  };
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => {
      // The analytics worker runs activities only, by design.
      if (entry.message.startsWith('No workflows registered')) return;
      logger[levels[entry.level]]({ temporal: entry.meta }, entry.message);
    }),
  });
}
