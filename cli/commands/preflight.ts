import type { Logger } from 'pino';
import { prepareOnce } from '../../connectors/prepare-once.js';
import type { Config } from '../../schemas/config.js';
import type { StreamName } from '../../schemas/streams.js';
import { buildDependencies, type Dependencies } from '../../worker/compose.js';
import {
  KeyRefusedError,
  type Preflight,
  probeStreams,
  type StreamVerdict,
  verdictLines,
} from '../preflight/verdicts.js';
import { reportFailure, withConfig } from './context.js';

/** A failure found before anything started: the CLI prints it and exits 1 (the source or the warehouse said no). */
export class PreflightError extends Error {
  /** What each selected stream's probe found, when the streams were probed. */
  readonly verdicts: StreamVerdict[] | undefined;
  constructor(message: string, verdicts?: StreamVerdict[]) {
    super(message);
    this.verdicts = verdicts;
  }
}

/** Probes the selected streams; a refused key or an unusable source is a PreflightError. */
async function probe(deps: Dependencies, config: Config, streams: readonly StreamName[]): Promise<Preflight> {
  try {
    return await probeStreams(deps.client, streams, {
      includeComments: config.SYNC_CSAT_COMMENTS,
      reportQueries: config.REPORT_QUERIES?.queries.length ?? 0,
    });
  } catch (err) {
    if (err instanceof KeyRefusedError) throw new PreflightError(err.message);
    throw new PreflightError(`the Support API is not usable: ${(err as Error).message}`);
  }
}

/**
 * Before a run starts: one cheap request per selected stream (a wrong or revoked key fails at the first,
 * with the API's code and request_id; a stream the key may not read is named with what it lacks and the
 * SYNC_STREAMS that leaves it out), then the destination's tables are created or migrated. Nothing is
 * written when it fails.
 */
export async function preflight(
  deps: Dependencies,
  logger: Logger,
  config: Config,
  streams: readonly StreamName[],
): Promise<void> {
  const result = await probe(deps, config, streams);
  if (result.problem) throw new PreflightError(result.problem, result.verdicts);
  const unverified = result.verdicts.filter((v) => v.status === 'unverified');
  if (unverified.length > 0)
    logger.warn(
      { unverified: unverified.map((v) => `${v.stream}: ${v.detail}`) },
      'preflight: some streams could not be verified; the run reads them, and their reads retry on their own',
    );
  try {
    await prepareOnce(deps.destination);
  } catch (err) {
    throw new PreflightError(`the destination is not usable: ${(err as Error).message}`);
  }
  // The writes of the run itself, tried before it starts: a destination that answers reads but cannot be
  // written (BigQuery's Storage Write API out of reach) fails here in seconds, not as a run that waits.
  try {
    await deps.destination.probeWrite();
  } catch (err) {
    throw new PreflightError(`the destination cannot be written: ${(err as Error).message}`);
  }
  logger.debug({ verdicts: result.verdicts }, 'preflight passed');
}

/**
 * `preflight`: what a run would find, without starting one — each selected stream's verdict and whether the
 * destination answers (a read, no DDL) and takes a run's writes (Destination.probeWrite, nothing left behind). Exit 0 when a run can start, 1 when not, 2 on a bad configuration.
 */
export function preflightCommand(opts: {
  config?: string;
  streams?: StreamName[];
  json?: boolean;
}): Promise<number> {
  return withConfig(opts, async (config, logger) => {
    const streams = opts.streams ?? config.SYNC_STREAMS;
    const deps = await buildDependencies(config, logger);
    try {
      let result: Preflight | undefined;
      let refused: string | null = null;
      try {
        result = await probe(deps, config, streams);
      } catch (err) {
        refused = (err as Error).message;
      }
      // A read, then the writes of a run, rolled back or invisible (Destination.probeWrite), where its tables
      // exist; a destination never prepared is written first by the run that creates them.
      let written: 'probed' | 'not_prepared' | null = null;
      const destination = await deps.destination
        .currentTime()
        .then(() => null)
        .catch((err: unknown) => `the destination is not usable: ${(err as Error).message}`)
        .then(async (problem) => {
          if (problem !== null) return problem;
          try {
            written = await deps.destination.probeWrite();
            return null;
          } catch (err) {
            return `the destination cannot be written: ${(err as Error).message}`;
          }
        });
      const destinationState =
        written === 'probed' ? 'reachable, writable' : 'reachable (no tables yet: writes not probed)';
      const problems = [refused ?? result?.problem ?? null, destination].filter((p) => p !== null);
      if (opts.json) {
        const report = {
          ok: problems.length === 0,
          streams: result?.verdicts ?? [],
          destination: destination ?? destinationState,
          problems,
        };
        process.stdout.write(`${JSON.stringify(report)}\n`);
      } else {
        const lines = [
          `preflight of ${streams.length} stream${streams.length === 1 ? '' : 's'}: ${streams.join(',')}`,
          ...verdictLines(result?.verdicts ?? []),
          `  ${'destination'.padEnd(17)}${destination ? `${'FAILED'.padEnd(11)}${destination}` : `${'ok'.padEnd(11)}${destinationState}`}`,
          ...(problems.length > 0 ? problems : ['preflight passed: a run can start']),
        ];
        process.stdout.write(`${lines.join('\n')}\n`);
      }
      return problems.length === 0 ? 0 : 1;
    } catch (err) {
      return reportFailure(err);
    } finally {
      await deps.close();
    }
  });
}
