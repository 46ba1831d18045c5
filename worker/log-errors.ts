import { type Scrubber, serverText } from '../connectors/support-api/server-text.js';

/** The longest text (a message, a stack, any string) a log line keeps of one value, in characters. */
export const LOG_ERROR_TEXT_LIMIT = 2000;
/** How deep a log object is searched for errors, and how many causes of one error are followed. */
const MAX_DEPTH = 6;

/**
 * The arguments of one pino call (`logger.warn(…)`), in whatever shape the caller passed them — an Error
 * first (`logger.error(err)`), an object with an error anywhere in it, a message with interpolated values —
 * made safe before pino reads any of them: pino takes an Error's message as the line's `msg` before any
 * formatter runs, so this runs as its `logMethod` hook. The object comes out as `withSerializedErrors` makes
 * it, every string argument as `serverText` makes it (secrets scrubbed, invisible characters escaped, cut).
 */
export function safeLogArguments(args: readonly unknown[], secrets: Scrubber): unknown[] {
  const [first, ...rest] = args;
  const text = safeText(secrets);
  const value = (v: unknown) =>
    typeof v === 'string'
      ? text(v)
      : typeof v === 'object' && v !== null
        ? withSerializedErrors({ v }, secrets)['v']
        : v;
  if (first instanceof Error) {
    // pino's own reading of `logger.error(err)`: the error under `err`, its message the line's message.
    const message = rest.length > 0 ? rest : [first.message];
    return [withSerializedErrors({ err: first }, secrets), ...message.map(value)];
  }
  if (typeof first === 'object' && first !== null)
    return [withSerializedErrors(first as Record<string, unknown>, secrets), ...rest.map(value)];
  return args.map(value);
}

/**
 * A log object with every string in it, however deep, made safe (`serverText`: secrets scrubbed,
 * invisible characters escaped, cut to LOG_ERROR_TEXT_LIMIT), and every `Error` in it (Temporal's worker logs
 * `{ error }` inside its own meta) turned into plain JSON that keeps what matters: its type, message, code,
 * the error's own JSON (`toJSON`, e.g. the client's endpoint and request id, made safe like the rest) and its
 * causes, whatever they are. Without this, an Error under any key but a top-level `err` reaches the log as
 * its enumerable fields only — `{"name":"DestinationError"}`, the message gone.
 */
export function withSerializedErrors(
  object: Record<string, unknown>,
  secrets: Scrubber,
): Record<string, unknown> {
  const visited = new WeakSet<object>();
  const text = safeText(secrets);
  const visit = (value: unknown, depth: number): unknown => {
    if (typeof value === 'string') return text(value);
    if (typeof value !== 'object' || value === null) return value;
    if (visited.has(value)) return '[circular]';
    if (depth > MAX_DEPTH)
      return value instanceof Error ? { type: value.name, message: text(String(value.message)) } : '[…]';
    visited.add(value);
    if (value instanceof Error) return errorJson(value, depth);
    if (Array.isArray(value)) return value.map((v) => visit(v, depth + 1));
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) {
      // A class instance is logged as its JSON (a Secret redacts itself, a URL is its href), made safe too.
      const json = ownJson(value);
      return json === value ? fields(value, depth) : visit(json, depth + 1);
    }
    return fields(value, depth);
  };
  const fields = (value: object, depth: number): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[text(k)] = visit(v, depth + 1);
    return out;
  };
  const errorJson = (err: Error, depth: number): Record<string, unknown> => {
    const asJson = ownJson(err);
    const code = (err as { code?: unknown }).code;
    const json: Record<string, unknown> = {
      ...(typeof asJson === 'object' && asJson !== null && asJson !== err && !Array.isArray(asJson)
        ? (visit(asJson, depth + 1) as Record<string, unknown>)
        : {}),
      type: text(err.name || err.constructor.name),
      message: text(String(err.message)),
    };
    if ((typeof code === 'string' || typeof code === 'number') && json['code'] === undefined)
      json['code'] = visit(code, depth + 1);
    if (typeof err.stack === 'string') json['stack'] = stackText(err.stack, secrets);
    if (err.cause !== undefined && depth < MAX_DEPTH) json['cause'] = visit(err.cause, depth + 1);
    if (err instanceof AggregateError)
      json['errors'] = err.errors.slice(0, 5).map((e: unknown) => visit(e, depth + 1));
    return json;
  };
  return visit(object, 0) as Record<string, unknown>;
}

const safeText = (secrets: Scrubber) => (value: string) => serverText(value, secrets, LOG_ERROR_TEXT_LIMIT);

/** A stack, its lines kept apart (each made safe on its own), the whole cut to LOG_ERROR_TEXT_LIMIT. */
function stackText(stack: string, secrets: Scrubber): string {
  const lines = secrets
    .scrub(stack)
    .split('\n')
    .map((line) => serverText(line, secrets, LOG_ERROR_TEXT_LIMIT));
  const whole = lines.join('\n');
  return whole.length <= LOG_ERROR_TEXT_LIMIT ? whole : `${whole.slice(0, LOG_ERROR_TEXT_LIMIT - 1)}…`;
}

/** What `JSON.stringify` would write for a value with a `toJSON`; the value itself without one (or if it throws). */
function ownJson(value: object): unknown {
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON !== 'function') return value;
  try {
    return (toJSON as () => unknown).call(value);
  } catch {
    return value;
  }
}
