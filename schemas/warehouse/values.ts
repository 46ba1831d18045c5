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

/**
 * How deep a JSON value the warehouse takes: objects and arrays nested at most this many levels. Far beyond
 * any document the API defines (a ticket is a few levels deep) and under BigQuery's JSON nesting limit (500);
 * the functions here that walk a value recurse once per level, so a deeper value (a source sending an array
 * nested thousands deep) would otherwise end in `RangeError: Maximum call stack size exceeded`. The reader
 * sets such an item aside (connectors/support-api/parse.ts); the walks below refuse it by name all the same.
 */
export const MAX_JSON_DEPTH = 128;

/** A JSON value nested deeper than MAX_JSON_DEPTH reached a function that walks it. */
export class JsonTooDeepError extends Error {
  override readonly name = 'JsonTooDeepError';
  constructor(readonly limit: number) {
    super(`JSON nested deeper than ${limit} levels`);
  }
}

/**
 * Whether a JSON value nests objects and arrays more than `limit` levels (a scalar: 0, `[]`: 1). Walks with a
 * stack of its own, never recursion, so any depth is measured; stops at the first path past the limit.
 */
export function jsonDeeperThan(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  while (stack.length > 0) {
    const { value: v, depth } = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth + 1 > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v))
      stack.push({ value: child, depth: depth + 1 });
  }
  return false;
}

/**
 * A copy of a JSON value cut at `limit` levels: what lies deeper is replaced by a short text saying so.
 * What `_rejected` keeps of an item set aside for its depth (the rest of the item stays readable).
 */
export function jsonCutAt(value: unknown, limit = MAX_JSON_DEPTH, depth = 0): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth >= limit) return `[nested deeper than ${limit} levels: cut]`;
  if (Array.isArray(value)) return value.map((v) => jsonCutAt(v, limit, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonCutAt(v, limit, depth + 1)]));
}

/**
 * A JSON value with every string (keys included) made storable; JsonTooDeepError past the cap. A value that
 * is storable already — what JSON.parse gives for nearly every item — is returned as it is: it is walked
 * once to check, not copied (a copy of every item's `_raw` was garbage made on each row). Otherwise a deep
 * copy: its members defined (`Object.fromEntries`), never assigned, so a key `__proto__` (which JSON.parse
 * makes an own member) is kept as a member instead of setting the prototype. The value is never changed.
 */
export function storableJson(value: unknown, depth = 0): unknown {
  return isStorableJson(value, depth) ? value : storableCopy(value, depth);
}

/**
 * Whether `storableJson` would copy nothing away: every string well formed and free of U+0000, every
 * number finite, no undefined member, and every object a plain one (an object of another prototype is
 * copied into a plain one). JsonTooDeepError past the cap, as the copy throws.
 */
function isStorableJson(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return isStorableString(value);
  if (typeof value === 'number') return Number.isFinite(value);
  if (value === null || typeof value !== 'object') return true;
  if (depth >= MAX_JSON_DEPTH) throw new JsonTooDeepError(MAX_JSON_DEPTH);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isStorableJson(value[i], depth + 1)) return false;
    return true;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const k in value) {
    if (!Object.hasOwn(value, k)) return false;
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined || !isStorableString(k) || !isStorableJson(v, depth + 1)) return false;
  }
  return true;
}

const isStorableString = (text: string) =>
  (text as string & { isWellFormed(): boolean }).isWellFormed() && !text.includes('\u0000');

/** The deep copy of storableJson (a value that is not storable as it is). */
function storableCopy(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return storableString(value);
  if (value !== null && typeof value === 'object' && depth >= MAX_JSON_DEPTH)
    throw new JsonTooDeepError(MAX_JSON_DEPTH);
  if (Array.isArray(value)) return value.map((v) => storableCopy(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).flatMap(([k, v]) =>
        v === undefined ? [] : [[storableString(k), storableCopy(v, depth + 1)]],
      ),
    );
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
 * (or a JSON round-trip) put the keys in. Undefined object members are dropped, as JSON.stringify does;
 * an undefined array element is null. JsonTooDeepError past MAX_JSON_DEPTH. Written into one string as it
 * walks (it runs over every row's content for its hash): no entry arrays, no sort callback — the default
 * sort is code-unit order, as byText.
 */
export function canonicalJson(value: unknown, depth = 0): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'bigint') return JSON.stringify(value.toString());
    return JSON.stringify(value ?? null);
  }
  if (depth >= MAX_JSON_DEPTH) throw new JsonTooDeepError(MAX_JSON_DEPTH);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      out += canonicalJson(value[i] ?? null, depth + 1);
    }
    return `${out}]`;
  }
  const keys = Object.keys(value).sort();
  let out = '{';
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k];
    if (v === undefined) continue;
    if (out.length > 1) out += ',';
    out += `${JSON.stringify(k)}:${canonicalJson(v, depth + 1)}`;
  }
  return `${out}}`;
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
