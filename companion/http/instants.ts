import { Timestamp } from '../../schemas/api/index.js';
import { validation } from './errors.js';

const ISO = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * Parses an ISO 8601 instant with `Z` or an explicit offset (spec 4.13 rule 1) into epoch microseconds.
 * Digits beyond microseconds are truncated.
 */
export function parseInstantUs(text: string, name: string): number {
  const m = Timestamp.safeParse(text).success ? ISO.exec(text) : null;
  if (!m) throw validation(`${name} must be an ISO 8601 instant with Z or an explicit offset`);
  const ms = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(ms)) throw validation(`${name} is not a valid instant`);
  const frac = (m[2] ?? '').padEnd(6, '0').slice(0, 6);
  return ms * 1000 + Number(frac);
}

/** ISO 8601 with milliseconds. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** ISO 8601 with microseconds (spec 2.7 `sent_at`). */
export function isoMicros(us: number): string {
  const ms = Math.floor(us / 1000);
  const micro = String(us - ms * 1000).padStart(3, '0');
  return `${new Date(ms).toISOString().slice(0, 23)}${micro}Z`;
}
