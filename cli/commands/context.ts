import type { Logger } from 'pino';
import { type TemporalTarget, temporalFor } from '../../embedded/temporal.js';
import { type Config, isLoopbackUrl } from '../../schemas/config.js';
import { Secrets, secretsOf } from '../../schemas/secret.js';
import { ConfigError, type LoadOptions, loadConfig } from '../../worker/config.js';
import { capWorkflowThreadHeap } from '../../worker/heap-cap.js';
import { createLogger } from '../../worker/logger.js';
import type { MetricsAddress } from '../../worker/metrics-endpoint.js';
import { installTemporalRuntime } from '../../worker/temporal-runtime.js';

/**
 * Loads the configuration (one line per problem and exit code 2 when it is bad, before anything starts)
 * and the process logger, caps the workflow thread's heap (worker/heap-cap.ts), installs the Temporal runtime (with its metrics exporter when the command serves
 * `--metrics-port`), then runs the command.
 */
export async function withConfig(
  opts: { config?: string; metricsPort?: MetricsAddress; workspace?: string },
  run: (config: Config, logger: Logger, secrets: Secrets) => Promise<number>,
  overrides: Record<string, string> = {},
  options: LoadOptions = {},
): Promise<number> {
  let config: Config;
  try {
    config = loadConfig(
      process.env,
      opts.config,
      { ...overrides, ...(opts.workspace !== undefined ? { SYNC_WORKSPACE: opts.workspace } : {}) },
      options,
    );
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const problem of err.problems) process.stderr.write(`config error: ${problem}\n`);
      return 2;
    }
    throw err;
  }
  // Every secret of the configuration is scrubbed from every line the logger writes, whatever wrote it; the
  // ones read later (a Temporal profile's API key) join them.
  const secrets = new Secrets(secretsOf(config));
  const logger = createLogger(config.LOG_LEVEL, secrets, undefined, config.SYNC_WORKSPACE);
  warnOfPlainHttp(config, logger);
  // Before any command creates a worker (and with it the workflow thread the cap applies to).
  capWorkflowThreadHeap(config.TEMPORAL_WORKFLOW_HEAP_MB, logger);
  await installTemporalRuntime(logger, { metrics: opts.metricsPort !== undefined });
  return run(config, logger, secrets);
}

/**
 * `withConfig`, then the command's Temporal (`temporalFor`: whether an unset TEMPORAL_ADDRESS means an
 * embedded dev server), closed — connection or server — whatever the command's outcome.
 */
export function withTemporal(
  opts: { config?: string; metricsPort?: MetricsAddress; workspace?: string },
  temporalOptions: Parameters<typeof temporalFor>[2],
  run: (context: {
    config: Config;
    logger: Logger;
    temporal: TemporalTarget;
    secrets: Secrets;
  }) => Promise<number>,
): Promise<number> {
  return withConfig(opts, async (config, logger, secrets) => {
    let temporal: TemporalTarget;
    try {
      temporal = await temporalFor(config, logger, { ...temporalOptions, secrets });
    } catch (err) {
      return reportFailure(err);
    }
    try {
      return await run({ config, logger, temporal, secrets });
    } finally {
      await temporal.close();
    }
  });
}

/** The opt-in to a plain http source on another machine, said at every start (the key crosses unencrypted). */
export function warnOfPlainHttp(config: Config, logger: Logger): void {
  const url = new URL(config.SUPPORT_API_URL);
  if (url.protocol === 'http:' && !isLoopbackUrl(config.SUPPORT_API_URL))
    logger.warn(
      { host: url.host },
      'SUPPORT_API_ALLOW_HTTP=true: the API key is sent over plain http to another machine, unencrypted',
    );
}

/**
 * Prints a failure without a stack (the messages are written for operators) and returns its exit code: 2 for
 * a configuration problem found late (a Temporal certificate that cannot be read: one line per problem),
 * 1 for anything else.
 */
export function reportFailure(err: unknown): number {
  if (err instanceof ConfigError) {
    for (const problem of err.problems) process.stderr.write(`config error: ${problem}\n`);
    return 2;
  }
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
}
