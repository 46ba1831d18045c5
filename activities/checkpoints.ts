import type { StateReads } from '../connectors/destination.js';
import { encodeStateKey, type StateKey } from '../schemas/state-key.js';
import type { Checkpoint, CheckpointUpdate } from '../schemas/warehouse.js';

/** What the next checkpoint takes from the one before it (stored, or the last of pages not committed yet). */
export type CheckpointCounts = Pick<Checkpoint, 'pages' | 'rows' | 'high_water_mark'>;

/** The next checkpoint after one more page of `rows` rows. */
export function nextCheckpoint(
  previous: CheckpointCounts | null,
  update: {
    stream: string;
    scope: string;
    cursor: string | null;
    done: boolean;
    rows: number;
    highWaterMark?: string | null;
  },
): CheckpointUpdate {
  return {
    stream: update.stream,
    scope: update.scope,
    cursor: update.done ? null : update.cursor,
    high_water_mark: update.highWaterMark ?? previous?.high_water_mark ?? null,
    status: update.done ? 'complete' : 'running',
    pages: (previous?.pages ?? 0) + 1,
    rows: (previous?.rows ?? 0) + update.rows,
  };
}

/** A checkpoint back at the start of its scope (a new run of a completed window, a rejected cursor). */
export function restartedCheckpoint(key: StateKey, highWaterMark: string | null = null): CheckpointUpdate {
  return {
    ...encodeStateKey(key),
    cursor: null,
    high_water_mark: highWaterMark,
    status: 'running',
    pages: 0,
    rows: 0,
  };
}

export function laterInstant(a: string | null | undefined, b: string | null | undefined): string | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

/** The checkpoint stored under `key` (see StateReads.readCheckpoint for `options`). */
export function readState(
  reads: Pick<StateReads, 'readCheckpoint'>,
  key: StateKey,
  options?: Parameters<StateReads['readCheckpoint']>[2],
): Promise<Checkpoint | null> {
  const { stream, scope } = encodeStateKey(key);
  return reads.readCheckpoint(stream, scope, options);
}
