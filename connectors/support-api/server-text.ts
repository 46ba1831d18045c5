/** Anything that removes secrets from a text: one `Secret`, or all of a process's (`Secrets`). */
export interface Scrubber {
  scrub(text: string): string;
}

/**
 * Text a source chose (an error's message, code or request_id, a body's first characters, a field's name, a
 * rejected item's reason, a cursor shown in a message) made safe to put in an error, a log line, a Temporal
 * failure, the warehouse's bookkeeping (`_rejected`, `_schema_changes`), a terminal or the run summary:
 *
 * 1. every secret scrubbed out as `[redacted]`, on the whole text, before anything is cut (a secret straddling
 *    the cut would otherwise show all but its last characters);
 * 2. every character a terminal does not show as itself escaped, visibly: `\u001b` for ESC, `\u0000` for NUL
 *    (see INVISIBLE). Nothing is removed, so a field named `evil\e[2J` is told apart from `evil[2J`, and an
 *    escape sequence is shown as text instead of acting on the terminal;
 * 3. cut to `maxChars` with `…`, never inside an escape or a surrogate pair.
 *
 * A secret split by an escape sequence or an invisible character (`AB\u001b[0mCD`, `AB\u200bCD`: a terminal
 * shows `ABCD`) is not the secret to a plain scrub; when what a terminal would show of the text holds a
 * secret, that is what is kept (escape sequences and invisible characters removed, then the secret
 * scrubbed), so no terminal or log reader sees it whole, escaped or not.
 */
export function serverText(text: string, secrets: Scrubber, maxChars: number): string {
  const scrubbed = secrets.scrub(text);
  const shown = asShown(scrubbed);
  // A secret that only an escape or an invisible character keeps apart: what a terminal shows goes instead.
  const clean =
    secrets.scrub(shown) === shown ? secrets.scrub(escapeInvisible(scrubbed)) : secrets.scrub(asShown(text));
  return clean.length <= maxChars ? clean : `${cutAt(clean, maxChars - 1)}…`;
}

/**
 * Characters a terminal or a log viewer does not show as themselves: controls (C0 with line breaks and tabs,
 * DEL, C1), format characters (zero-width spaces and joiners, bidirectional overrides, the soft hyphen),
 * line and paragraph separators, and surrogates not in a pair (not text at all).
 */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/gu;
/** What escapeInvisible writes for one UTF-16 unit of them. */
const ESCAPED = /\\u[0-9a-f]{4}/g;

/**
 * Each invisible character as `\uXXXX`, one per UTF-16 unit (a character above the BMP as its surrogate
 * pair): the escape JSON itself uses, so JSON text escaped this way is still JSON, of the same value.
 */
export function escapeInvisible(text: string): string {
  return text.replace(INVISIBLE, (c) => {
    let out = '';
    for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
    return out;
  });
}

/** The longest line a command prints of what the source said (status, the run's summary table). */
export const TERMINAL_LINE_LIMIT = 4000;

/** Lines for a terminal, each made safe like every text a source chose (serverText), joined. */
export function terminalLines(lines: readonly string[], secrets: Scrubber): string {
  return lines.map((line) => serverText(line, secrets, TERMINAL_LINE_LIMIT)).join('\n');
}

/**
 * A value as one line of JSON for a terminal or a pipe (the sync's summary, `status --json`): the same value
 * when parsed, with the secrets scrubbed and every character a terminal does not show as itself written as
 * a `\uXXXX` escape (JSON.stringify leaves C1 controls, bidirectional overrides and line separators raw).
 */
export function terminalJson(value: unknown, secrets: Scrubber): string {
  return escapeInvisible(secrets.scrub(JSON.stringify(value)));
}

/**
 * What a terminal shows of a text: ESC-introduced sequences (CSI `ESC [ … final`, OSC `ESC ] … BEL|ESC \`,
 * two-character escapes) removed whole, then the other invisible characters.
 */
function asShown(text: string): string {
  return text.replace(ESCAPE_SEQUENCE, '').replace(INVISIBLE, '');
}
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is the point
const ESCAPE_SEQUENCE = /\u001b(?:\[[0-?]*[ -/]*[@-~]?|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-_]?)/g;

/** The first `n` UTF-16 units, without a lone high surrogate or an escape cut short at the end. */
function cutAt(text: string, n: number): string {
  let cut = text.slice(0, n);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  // An escape cut short (`\u00`) would read as something else: it goes whole or not at all.
  const start = cut.lastIndexOf('\\', cut.length - 1);
  if (start >= 0 && start > cut.length - 10) {
    ESCAPE_AT.lastIndex = start;
    const whole = ESCAPE_AT.exec(text);
    if (whole && start + whole[0].length > cut.length) cut = cut.slice(0, start);
  }
  return cut;
}
const ESCAPE_AT = new RegExp(ESCAPED.source, 'y');

/** How long a server's strings may be in what we report or keep (characters). */
export const SERVER_TEXT_LIMITS = {
  /** An error envelope's `message`; a rejected item's reason. */
  message: 500,
  /** An error envelope's `code` (the spec's are under 40 characters). */
  code: 64,
  /** An error envelope's `request_id`; an item's id. */
  requestId: 128,
  /** What a non-JSON body or an unparsable one starts with. */
  snippet: 120,
  /** A `Location` header of a refused redirect; a field's path in an error. */
  location: 200,
  /** A field's path, observed value and example in `_schema_changes` (the drift report cuts its own first). */
  drift: 500,
} as const;
