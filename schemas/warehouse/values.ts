import type { ColumnType } from './derive.js';

/**
 * Values in the one form the warehouse stores: timestamps canonical (so versions compare as strings),
 * strings and JSON made storable the same way in every destination, and JSON text with its keys sorted (so
 * equal content hashes equally). Pure functions; the table specs apply them column by column.
 */

const ISO_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * An ISO 8601 instant in the one form the warehouse stores and returns: UTC, microseconds,
 * `YYYY-MM-DDTHH:MM:SS.ffffffZ`. Equal instants give equal strings, and string order is time order, so
 * versions can be compared as strings. Input that is not an ISO instant is returned unchanged (the row
 * schema then reports it with the offending field).
 */
export function canonicalTimestamp(value: string | Date): string {
  if (value instanceof Date) return `${value.toISOString().slice(0, 23)}000Z`;
  const m = ISO_RE.exec(value);
  if (!m) return value;
  const [, y, mo, d, h, mi, s, frac = '', zone = 'Z'] = m;
  let offsetMin = 0;
  if (zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    offsetMin = sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4)));
  }
  const ms =
    Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)) - offsetMin * 60_000;
  if (Number.isNaN(ms)) return value;
  return `${new Date(ms).toISOString().slice(0, 19)}.${frac.padEnd(6, '0').slice(0, 6)}Z`;
}

/** Compares two stored versions (canonical or any ISO instant): negative, 0 or positive; null is oldest. */
export function compareVersions(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  const ca = canonicalTimestamp(a);
  const cb = canonicalTimestamp(b);
  return ca < cb ? -1 : ca > cb ? 1 : 0;
}

/**
 * Strings the warehouses cannot hold are made storable the same way in every destination: U+0000 (which
 * PostgreSQL rejects in text and jsonb) and lone UTF-16 surrogates become U+FFFD. Everything else,
 * including astral characters and very long texts, is kept as is.
 */
export function storableString(value: string): string {
  const s = value as string & { isWellFormed(): boolean; toWellFormed(): string }; // ES2024, in Node 20
  const wellFormed = s.isWellFormed() ? value : s.toWellFormed();
  return wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', '\uFFFD') : wellFormed;
}

/** Deep copy of a JSON value with every string (keys included) made storable. */
export function storableJson(value: unknown): unknown {
  if (typeof value === 'string') return storableString(value);
  if (Array.isArray(value)) return value.map(storableJson);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[storableString(k)] = storableJson(v);
    return out;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  return value;
}

/**
 * Code-unit order of strings, not the locale's: BigQuery's ORDER BY of STRING (byte order; equal for the
 * ASCII keys, ids and scopes sorted here) and a stable order for canonical forms.
 */
export const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * JSON with object keys sorted at every depth, so equal content gives equal text whatever order the source
 * (or a JSON round-trip) put the keys in. Undefined object members are dropped, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => byText(a, b));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  return JSON.stringify(value ?? null);
}

/** Converts an extracted value to its warehouse form; invalid values pass through for the row schema. */
export function toColumnValue(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'timestamp':
      return typeof value === 'string' || value instanceof Date ? canonicalTimestamp(value) : value;
    case 'string':
      return typeof value === 'string' ? storableString(value) : value;
    case 'json':
      return storableJson(value);
    default:
      return value;
  }
}
