import { InvalidArgumentError } from 'commander';
import { AUDIT_TABLE_NAMES, AuditTable } from '../schemas/audit.js';
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

/** `audit --sample N`: rows per table, 1 … MAX (an audit's workflow history grows with every request). */
export function parseAuditSample(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > MAX_AUDIT_SAMPLE)
    throw new InvalidArgumentError(`"${value}" is not a number of rows from 1 to ${MAX_AUDIT_SAMPLE}`);
  return n;
}

/** The most rows per table one `audit --sample` compares. */
export const MAX_AUDIT_SAMPLE = 1000;

/** `audit --table T`: one of the audited tables. */
export function parseAuditTable(value: string): AuditTable {
  const table = AuditTable.safeParse(value);
  if (!table.success)
    throw new InvalidArgumentError(`"${value}" is not an audited table (${AUDIT_TABLE_NAMES.join(', ')})`);
  return table.data;
}
