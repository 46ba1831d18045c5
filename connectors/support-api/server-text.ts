import type { Secret } from '../../schemas/secret.js';

/**
 * Text a server chose (an error's message, code or request_id, a body's first characters) made safe to put
 * in an error, a log line, a Temporal failure or the run summary: control characters (ANSI escape
 * sequences first, whole) removed, the key scrubbed out, then cut to `maxChars`.
 *
 * The order matters: the key is scrubbed from the whole cleaned text before it is cut, or a key straddling
 * the cut would show all but its last characters; and control characters go before the scrub, or a key
 * split by an escape (`AB\x1b[0mCD`) would survive the scrub and be whole again once the escape is removed.
 */
export function serverText(text: string, key: Secret, maxChars: number): string {
  const clean = key.scrub(withoutControlCharacters(text));
  return clean.length <= maxChars ? clean : `${cutAt(clean, maxChars - 1)}…`;
}

/** ESC-introduced sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`, two-character escapes). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
const ESCAPE_SEQUENCE = /\u001b(?:\[[0-?]*[ -/]*[@-~]?|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-_]?)/g;
/** C0 and C1 controls and DEL, line breaks and tabs included (a log line is one line). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: removing them is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

export function withoutControlCharacters(text: string): string {
  return text.replace(ESCAPE_SEQUENCE, '').replace(CONTROL, '');
}

/** The first `n` UTF-16 units, without a lone high surrogate at the end. */
function cutAt(text: string, n: number): string {
  const cut = text.slice(0, n);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}

/** How long a server's strings may be in what we report (characters). */
export const SERVER_TEXT_LIMITS = {
  /** An error envelope's `message`. */
  message: 500,
  /** An error envelope's `code` (the spec's are under 40 characters). */
  code: 64,
  /** An error envelope's `request_id`. */
  requestId: 128,
  /** What a non-JSON body or an unparsable one starts with. */
  snippet: 120,
  /** A `Location` header of a refused redirect. */
  location: 200,
} as const;
