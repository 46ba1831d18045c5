import { InvalidArgumentError } from 'commander';
import { AUDIT_TABLE_NAMES, AuditTable } from '../schemas/audit.js';
import { type StreamName, streamList } from '../schemas/streams.js';
import type { MetricsAddress } from '../worker/metrics-endpoint.js';

// Flag values are checked as they are parsed: a bad one is a usage error (exit 2) before anything starts.

/** `--streams a,b`: the named streams, each one the sync knows (the same rule as SYNC_STREAMS). */
export function parseStreams(value: string): StreamName[] {
  const list = streamList(value);
  if ('problem' in list) throw new InvalidArgumentError(list.problem);
  return list.streams;
}

/** `--from`/`--to`: a date (midnight UTC) or an ISO instant, as an ISO instant. */
export function parseInstant(value: string): string {
  const ms = Date.parse(/T/.test(value) ? value : `${value}T00:00:00Z`);
  if (!Number.isFinite(ms))
    throw new InvalidArgumentError(`"${value}" is not a date (YYYY-MM-DD) or ISO instant`);
  return new Date(ms).toISOString();
}

/** `--metrics-port`: a port (every interface) or `host:port` (`127.0.0.1:9464`, `[::1]:9464`); 0 picks a free port. */
export function parseMetricsAddress(value: string): MetricsAddress {
  const match = /^(?:\[([^\]]+)\]:|([^:[\]]+):)?(\d{1,5})$/.exec(value.trim());
  const port = Number(match?.[3]);
  if (!match || port > 65535)
    throw new InvalidArgumentError(
      `"${value}" is not a port (0-65535) or host:port, e.g. 9464 or 127.0.0.1:9464`,
    );
  const host = match[1] ?? match[2];
  return host ? { host, port } : { port };
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
