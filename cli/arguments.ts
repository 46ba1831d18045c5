import { InvalidArgumentError } from 'commander';
import { ALL_STREAMS, StreamName } from '../schemas/sync.js';

// Flag values are checked as they are parsed: a bad one is a usage error (exit 2) before anything starts.

/** `--streams a,b`: the named streams, each one the sync knows. */
export function parseStreams(value: string): StreamName[] {
  const names = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const name of names) {
    if (!StreamName.safeParse(name).success) {
      throw new InvalidArgumentError(`unknown stream "${name}" (streams: ${ALL_STREAMS.join(', ')})`);
    }
  }
  return names as StreamName[];
}

/** `--from`/`--to`: a date (midnight UTC) or an ISO instant, as an ISO instant. */
export function parseInstant(value: string): string {
  const ms = Date.parse(/T/.test(value) ? value : `${value}T00:00:00Z`);
  if (!Number.isFinite(ms))
    throw new InvalidArgumentError(`"${value}" is not a date (YYYY-MM-DD) or ISO instant`);
  return new Date(ms).toISOString();
}
