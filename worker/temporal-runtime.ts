import { createServer } from 'node:net';
import { DefaultLogger, type LogLevel, makeTelemetryFilterString, Runtime } from '@temporalio/worker';
import type { Logger } from 'pino';

let installed: { metricsUrl: string | null } | undefined;

/**
 * Installs the Temporal SDK's runtime of this process, once, before anything creates it (a connection, a
 * worker, an embedded dev server): its native logs go through the process's pino logger at warn and above,
 * and, with `metrics`, the SDK's own Prometheus exporter listens on a free loopback port
 * (`temporalRuntimeMetricsUrl`), from where the `/metrics` endpoint appends its metrics (worker/metrics-endpoint.ts).
 */
export async function installTemporalRuntime(
  logger: Logger,
  options: { metrics?: boolean } = {},
): Promise<void> {
  if (installed) return;
  const bindAddress = options.metrics ? await freeLoopbackAddress() : null;
  installed = { metricsUrl: bindAddress ? `http://${bindAddress}/metrics` : null };
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
      logger[levels[entry.level]](runtimeLogFields(entry.meta), entry.message);
    }),
    telemetryOptions: {
      // The native core's own lines (a workflow task over 5 s on a starved CPU, a poll that failed) come
      // through the logger above too: without `forward` the core prints them itself, coloured with terminal
      // escapes and outside the JSON log and its redaction.
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: 'WARN', other: 'ERROR' }) },
      ...(bindAddress
        ? {
            // Prometheus' conventions: counters end in _total, durations in seconds with the unit in the name.
            metrics: {
              prometheus: {
                bindAddress,
                countersTotalSuffix: true,
                useSecondsForDurations: true,
                unitSuffix: true,
              },
            },
          }
        : {}),
    },
  });
}

/**
 * The fields of a line of the SDK's (its `meta` under `temporal`): the workspace of a workflow or an
 * activity of another workspace than `default` (their interceptors add it to `meta`) is the line's own
 * `workspace`, as on every other line of that workspace (worker/logger.ts).
 */
export function runtimeLogFields(meta: Record<string, unknown> | undefined): Record<string, unknown> {
  const { workspace, ...rest } = meta ?? {};
  return typeof workspace === 'string' ? { workspace, temporal: rest } : { temporal: meta };
}

/** Where the SDK's exporter serves its metrics, when the runtime was installed with them. */
export function temporalRuntimeMetricsUrl(): string | null {
  return installed?.metricsUrl ?? null;
}

/** `127.0.0.1:<a port free now>` (the SDK's exporter needs a concrete address; it cannot report port 0's). */
function freeLoopbackAddress(): Promise<string> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(`127.0.0.1:${port}`));
    });
  });
}
