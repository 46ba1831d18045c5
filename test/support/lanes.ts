import { readFileSync } from 'node:fs';

/**
 * Which test files must never run beside each other. The BigQuery emulator computes (DuckDB behind a
 * Python server), so two files each with an emulator of their own take each other's CPU and slow down
 * several times over, where files waiting on timers and backoffs overlap well: the files that start an
 * emulator run one at a time, in one lane, while the other files fill the remaining forks
 * (test/support/lane-pool.ts hands them to vitest).
 *
 * A file is in the BigQuery lane when it imports the emulator's starter itself; modules under test/ that
 * are not test files do not (test/unit/test-lanes.test.ts keeps that so), so no file reaches an emulator
 * without being in the lane.
 */
export const BIGQUERY_LANE = 'bigquery';
export type Lane = typeof BIGQUERY_LANE;

const STARTS_EMULATOR = /import \{[^}]*\bstartBigQueryEmulator\b[^}]*\} from '[^']*\/bigquery-emulator\.js'/;

/** The lane of a test file's source text, or null for a file that may run beside any other. */
export function laneOfSource(source: string): Lane | null {
  return STARTS_EMULATOR.test(source) ? BIGQUERY_LANE : null;
}

/** The lane of the test file at `path`. */
export function laneOfFile(path: string): Lane | null {
  return laneOfSource(readFileSync(path, 'utf8'));
}

/**
 * Runs `laned` one at a time and `others` beside them, at most `slots` at once: a lane file whenever the
 * lane is free (the lane is the run's longest chain, so it should never wait), else the next other file, in
 * the order given. Resolves when all have run (or, once `cancelled()` says so, when those started have);
 * rejects with every error `run` gave, after all have run.
 */
export async function runInLanes<T>(options: {
  laned: readonly T[];
  others: readonly T[];
  slots: number;
  run: (item: T) => Promise<void>;
  cancelled?: () => boolean;
}): Promise<void> {
  const laned = [...options.laned];
  const others = [...options.others];
  const cancelled = options.cancelled ?? (() => false);
  const errors: unknown[] = [];
  let running = 0;
  let laneBusy = false;
  await new Promise<void>((done) => {
    const next = () => {
      while (running < options.slots && !cancelled()) {
        const inLane = !laneBusy && laned.length > 0;
        const item = inLane ? laned.shift() : others.shift();
        if (item === undefined) break;
        running += 1;
        if (inLane) laneBusy = true;
        options
          .run(item)
          .catch((err: unknown) => {
            errors.push(err);
          })
          .finally(() => {
            running -= 1;
            if (inLane) laneBusy = false;
            next();
          });
      }
      if (running === 0 && (cancelled() || (laned.length === 0 && others.length === 0))) done();
    };
    next();
  });
  if (errors.length > 0) throw new AggregateError(errors, 'Errors occurred while running tests.');
}
