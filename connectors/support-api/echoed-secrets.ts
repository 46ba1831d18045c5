import type { Scrubber } from './server-text.js';

/**
 * Scrubs every secret from a decoded answer, in place, before anything reads it: a source that echoes the
 * API key inside an item (a subject, a custom field, a member's name) would otherwise have it stored in the
 * typed columns and in `_raw`, shown in `_rejected` and `_schema_changes`, and carried into Temporal. Every
 * string value and every member name holding a secret has it replaced by `[redacted]`; the answer is data,
 * so nothing else changes (control characters stay, a stored value is not a display).
 *
 * Returns how many strings and names held a secret. `text` is the body the JSON was decoded from: when it
 * holds no secret and no escape that could spell one (`\u…`, `\/`, `\"`, `\\`), the walk is skipped, so an answer that
 * echoes nothing costs one search of its text. The walk is iterative: an answer nested thousands of levels
 * deep is walked like a flat one.
 */
const SPELLING_ESCAPE = /\\[u/"\\]/;

export function scrubEchoedSecrets(json: unknown, text: string, secrets: Scrubber): number {
  if (!SPELLING_ESCAPE.test(text) && secrets.scrub(text) === text) return 0;
  let scrubbed = 0;
  const clean = (value: string): string => {
    const out = secrets.scrub(value);
    if (out !== value) scrubbed += 1;
    return out;
  };
  const pending: unknown[] = [json];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const v: unknown = node[i];
        if (typeof v === 'string') node[i] = clean(v);
        else if (typeof v === 'object' && v !== null) pending.push(v);
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const name of Object.keys(record)) {
      const v = record[name];
      const value = typeof v === 'string' ? clean(v) : v;
      if (typeof v === 'object' && v !== null) pending.push(v);
      const cleanName = clean(name);
      if (cleanName !== name) delete record[name];
      // Defined, not assigned: a member named `__proto__` is data, and assigning it would set the prototype.
      if (cleanName !== name || value !== v)
        Object.defineProperty(record, cleanName, {
          value,
          writable: true,
          enumerable: true,
          configurable: true,
        });
    }
  }
  return scrubbed;
}
