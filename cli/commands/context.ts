import type { Logger } from 'pino';
import { type TemporalTarget, temporalFor } from '../../embedded/temporal.js';
import type { Config } from '../../schemas/config.js';
import { ConfigError, loadConfig } from '../../worker/config.js';
import { createLogger, installTemporalRuntimeLogger } from '../../worker/logger.js';

/**
 * Loads the configuration (one line per problem and exit code 2 when it is bad, before anything starts)
 * and the process logger, then runs the command.
 */
export async function withConfig(
  opts: { config?: string },
  run: (config: Config, logger: Logger) => Promise<number>,
  overrides: Record<string, string> = {},
): Promise<number> {
  let config: Config;
  try {
    config = loadConfig(process.env, opts.config, overrides);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const problem of err.problems) process.stderr.write(`config error: ${problem}\n`);
      return 2;
    }
    throw err;
  }
  const logger = createLogger(config.LOG_LEVEL);
  installTemporalRuntimeLogger(logger);
  return run(config, logger);
}

/**
 * Runs a command's work against its Temporal (see `temporalFor`: whether an unset TEMPORAL_ADDRESS means an
 * embedded dev server) and closes the connection, or stops the server, whatever the work's outcome.
 */
export async function withTemporal<T>(
  config: Config,
  logger: Logger,
  options: Parameters<typeof temporalFor>[2],
  run: (temporal: TemporalTarget) => Promise<T>,
): Promise<T> {
  const temporal = await temporalFor(config, logger, options);
  try {
    return await run(temporal);
  } finally {
    await temporal.close();
  }
}

/** Prints a failure without a stack (the messages are written for operators) and returns exit code 1. */
export function reportFailure(err: unknown): number {
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
}
