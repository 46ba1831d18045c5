import type { SchemaChangeSighting } from '../schemas/warehouse.js';
import type { ActivityDeps } from './deps.js';

/**
 * What this worker process already wrote to `_schema_changes` in each recent run, so the later pages of a run
 * that keep showing the same drift (every page of a source that added a field) carry no sightings at all: no
 * statement, no lock, and on BigQuery no query billed per page. Only a saving: the destination's upsert
 * itself counts a run once, whatever another process or a retried page sends again.
 */
class RecordedDrift {
  /** Run id → sighting keys written in it; the most recent runs only. */
  readonly #runs = new Map<string, Set<string>>();

  unrecorded(sightings: readonly SchemaChangeSighting[]): SchemaChangeSighting[] {
    return sightings.filter((s) => !this.#runs.get(runOf(s))?.has(keyOf(s)));
  }

  /** After the page's transaction committed. */
  remember(sightings: readonly SchemaChangeSighting[]): void {
    for (const s of sightings) {
      const run = runOf(s);
      let keys = this.#runs.get(run);
      if (!keys) {
        keys = new Set();
        this.#runs.set(run, keys);
        // A process serves a few runs at once at most (a schedule, a backfill, a replay).
        if (this.#runs.size > MAX_RUNS) this.#runs.delete(this.#runs.keys().next().value!);
      }
      keys.add(keyOf(s));
    }
  }
}

const MAX_RUNS = 8;
const runOf = (s: SchemaChangeSighting) => s.runId ?? '';
const keyOf = (s: SchemaChangeSighting) => [s.table, s.fieldPath, s.kind, s.observed].join('\u0000');

const byDeps = new WeakMap<ActivityDeps, RecordedDrift>();

/** The worker's memory of recorded drift (one per set of activity dependencies, i.e. per worker). */
export function recordedDrift(deps: ActivityDeps): RecordedDrift {
  let memory = byDeps.get(deps);
  if (!memory) {
    memory = new RecordedDrift();
    byDeps.set(deps, memory);
  }
  return memory;
}
