import { describe, expect, it } from 'vitest';
import { scrubDrift } from '../../connectors/support-api/parse.js';
import {
  SERVER_TEXT_LIMITS,
  serverText,
  terminalJson,
  terminalLines,
} from '../../connectors/support-api/server-text.js';
import { Pagination } from '../../schemas/api/envelope.js';
import { Secret, Secrets } from '../../schemas/secret.js';

const KEY = 'sk_live_SCRUBKEY_0123456789';
const key = new Secret(KEY);
// biome-ignore lint/suspicious/noControlCharactersInRegex: what must never reach a terminal
const RAW = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069]/;
const EVIL = 'evil\u001b[2J\u001b]0;PWNED\u0007';

describe('one sanitiser for what the source says (serverText)', () => {
  it('escapes what a terminal would act on, visibly: a field name stays told apart, never acts', () => {
    expect(serverText(EVIL, key, 100)).toBe('evil\\u001b[2J\\u001b]0;PWNED\\u0007');
    expect(serverText('a\u009bb\u202ec\u200bd\u2028e\u0000f', key, 100)).toBe(
      'a\\u009bb\\u202ec\\u200bd\\u2028e\\u0000f',
    );
    // A lone surrogate is no text: escaped too; a pair (an emoji) is text.
    expect(serverText('x\ud800y 🙂', key, 100)).toBe('x\\ud800y 🙂');
    // Astral format characters (tags) as their surrogate pair, as JSON would write them.
    expect(serverText('a\u{e0041}b', key, 100)).toBe('a\\udb40\\udc41b');
  });

  it('cuts after escaping, never inside an escape', () => {
    for (let cap = 2; cap < 20; cap++) {
      const out = serverText('ab\u001b\u001b\u001b\u001b', key, cap);
      expect(out.length).toBeLessThanOrEqual(cap);
      expect(out.replace('…', '')).toMatch(/^(a|ab(\\u001b)*)$/);
    }
  });

  it('a key split by an escape sequence or an invisible character is still never shown whole', () => {
    for (const split of ['\u001b[0m', '\u200b', '\u00ad', '\u001b]0;t\u0007', '\u0000'])
      for (const at of [1, 8, KEY.length - 1]) {
        const text = `before ${KEY.slice(0, at)}${split}${KEY.slice(at)} after`;
        const out = serverText(text, key, 500);
        expect(out, JSON.stringify(text)).toBe('before [redacted] after');
      }
  });

  it('every secret of the process, longest first, one added later too', () => {
    const secrets = new Secrets([new Secret('short'), new Secret('short-and-longer')]);
    expect(serverText('a short-and-longer b short', secrets, 100)).toBe('a [redacted] b [redacted]');
    secrets.add(new Secret('tmprl_later'));
    expect(serverText('key tmprl_later', secrets, 100)).toBe('key [redacted]');
    expect(JSON.stringify({ secrets })).toBe('{"secrets":"[redacted]"}');
  });

  it('terminal output: lines escaped and scrubbed; JSON of the same value with nothing raw', () => {
    expect(terminalLines([`a ${EVIL}`, `b ${KEY}`], key)).toBe(
      'a evil\\u001b[2J\\u001b]0;PWNED\\u0007\nb [redacted]',
    );
    const value = { field: `${EVIL}\u009b\u202e\u2028`, n: 1, key: KEY };
    const json = terminalJson(value, key);
    expect(json).not.toMatch(RAW);
    expect(JSON.parse(json)).toEqual({ ...value, key: '[redacted]' });
  });

  it("a drift observation's texts: escaped, scrubbed, cut", () => {
    const o = scrubDrift(
      {
        fieldPath: `${EVIL}.${KEY}`,
        kind: 'new_field',
        observed: `x${'y'.repeat(2000)}`,
        expected: `\u001b[31m${KEY}`,
        jsonType: 'string',
        example: `"${KEY}\u0007"`,
        label: `\u009b${KEY}`,
      },
      key,
    );
    expect(o.fieldPath).toBe('evil\\u001b[2J\\u001b]0;PWNED\\u0007.[redacted]');
    expect(o.observed.length).toBeLessThanOrEqual(SERVER_TEXT_LIMITS.drift);
    expect(o.expected).toBe('\\u001b[31m[redacted]');
    expect(o.example).toBe('"[redacted]\\u0007"');
    expect(o.label).toBe('\\u009b[redacted]');
    expect(JSON.stringify(o)).not.toMatch(RAW);
  });
});

describe('a cursor is checked like every server string', () => {
  it('no control character, no lone surrogate, no absurd length', () => {
    for (const cursor of ['next\u0000page', 'a\u001bb', 'a\nb', 'a\u009bb', 'a\ud800', 'c'.repeat(4097)]) {
      const parsed = Pagination.safeParse({ has_more: true, next_cursor: cursor });
      expect(parsed.success, JSON.stringify(cursor.slice(0, 20))).toBe(false);
    }
    for (const cursor of ['eyJpZCI6MTJ9', 'a b+/=', 'ü🙂', 'c'.repeat(4096)])
      expect(Pagination.safeParse({ has_more: true, next_cursor: cursor }).success).toBe(true);
  });
});
