import type { Secret } from '../schemas/secret.js';

/** The longest message (and stack) a log line keeps of one error, in characters. */
export const LOG_ERROR_TEXT_LIMIT = 2000;
/** How deep a log object is searched for errors, and how many causes of one error are followed. */
const MAX_DEPTH = 6;

/**
 * A log object with every `Error` in it, however deep (Temporal's worker logs `{ error }` inside its own
 * meta), turned into plain JSON that keeps what matters: its type, message, code, the error's own safe JSON
 * (`toJSON`, e.g. the client's endpoint and request id) and its causes. Without this, an Error under any key
 * but a top-level `err` reaches the log as its enumerable fields only — `{"name":"DestinationError"}`, the
 * message gone. Every text is scrubbed of the given secrets and cut to LOG_ERROR_TEXT_LIMIT.
 */
export function withSerializedErrors(
  object: Record<string, unknown>,
  secrets: readonly Secret[],
): Record<string, unknown> {
  const seen = new WeakSet<object>();
  const text = (value: string) => {
    const clean = secrets.reduce((t, s) => s.scrub(t), value);
    return clean.length <= LOG_ERROR_TEXT_LIMIT ? clean : `${clean.slice(0, LOG_ERROR_TEXT_LIMIT - 1)}…`;
  };
  const visit = (value: unknown, depth: number): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    if (seen.has(value)) return '[circular]';
    if (depth > MAX_DEPTH)
      return value instanceof Error ? { type: value.name, message: text(value.message) } : '[…]';
    seen.add(value);
    if (value instanceof Error) return errorJson(value, depth);
    if (Array.isArray(value)) return value.map((v) => visit(v, depth + 1));
    if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null)
      return value; // class instances keep their own JSON (a Secret redacts itself)
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = visit(v, depth + 1);
    return out;
  };
  const errorJson = (err: Error, depth: number): Record<string, unknown> => {
    const own = typeof (err as { toJSON?: unknown }).toJSON === 'function' ? safeToJson(err) : {};
    const code = (err as { code?: unknown }).code;
    const json: Record<string, unknown> = {
      ...own,
      type: err.name || err.constructor.name,
      message: text(String(err.message)),
    };
    if ((typeof code === 'string' || typeof code === 'number') && json['code'] === undefined)
      json['code'] = code;
    if (typeof err.stack === 'string') json['stack'] = text(err.stack);
    if (err.cause !== undefined && depth < MAX_DEPTH) json['cause'] = visit(err.cause, depth + 1);
    if (err instanceof AggregateError)
      json['errors'] = err.errors.slice(0, 5).map((e: unknown) => visit(e, depth + 1));
    for (const [k, v] of Object.entries(json)) if (typeof v === 'string' && k !== 'stack') json[k] = text(v);
    return json;
  };
  return visit(object, 0) as Record<string, unknown>;
}

function safeToJson(err: Error): Record<string, unknown> {
  try {
    const json = (err as unknown as { toJSON(): unknown }).toJSON();
    return typeof json === 'object' && json !== null && !Array.isArray(json)
      ? (json as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}
