import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { warnOfPlainHttp } from '../../cli/commands/context.js';
import { ConfigError, loadConfig, readSettingsFile } from '../../worker/config.js';
import { cli } from '../support/cli.js';

/**
 * Settings that cannot be right are refused at start, each a config error naming the setting (exit 2),
 * never echoing a secret: through the schema for every case, through the real CLI entry for a few.
 */

const VALID = {
  SUPPORT_API_URL: 'https://support.example.com',
  SUPPORT_API_KEY: 'sk_live_0123456789abcdef',
  DESTINATION_URL: 'postgres://u:p@localhost:5432/db',
};
const HASH_KEY = '0123456789abcdef0123456789abcdef';

function problemsOf(env: Record<string, string>, file?: string): string[] {
  try {
    loadConfig(env, file);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

/** [setting, wrong value, what the message says]. */
const REFUSED: readonly [string, string, RegExp][] = [
  ['SYNC_LOOKBACK', 'P-5D', /negative/],
  ['SYNC_LOOKBACK', 'PT-1H', /negative/],
  ['SYNC_THREAD_LOOKBACK', 'P1DT-30H', /negative/],
  ['SYNC_SOURCE_PATIENCE', '-PT6H', /negative/],
  ['SYNC_SOURCE_PATIENCE', 'PT0S', /must be positive: PT0S would mean no limit at all .*for ever/],
  ['SYNC_FRESHNESS_SLO', 'P-1D', /negative/],
  ['SUPPORT_API_URL', 'http://support.example.com', /must be https/],
  ['SUPPORT_API_URL', 'http://10.0.0.5:8080', /must be https/],
  ['SUPPORT_API_URL', 'file:///etc/passwd', /https or http URL \(got file:\)/],
  ['SUPPORT_API_URL', 'javascript:alert(1)', /got javascript:/],
  ['SUPPORT_API_URL', 'https://user:pass@support.example.com', /user or password/],
  ['SUPPORT_API_URL', 'not a url', /is not a URL/],
  ['SUPPORT_API_URL', 'https://support.example.com/?tenant=1', /must not carry a \?query/],
  ['SUPPORT_API_URL', 'https://support.example.com?', /must not carry a \?query/],
  ['SUPPORT_API_URL', 'https://support.example.com/#top', /must not carry a #fragment: routes are appended/],
  ['SUPPORT_API_URL', 'http://evil.localhost:8080', /must be https/],
  ['BIGQUERY_API_ENDPOINT', 'https://bigquery.example.com/#x', /#fragment/],
  ['TEMPORAL_UI_URL', 'http://localhost:8233/?ns=x', /\?query/],
  ['BIGQUERY_API_ENDPOINT', 'file:///tmp/x', /got file:/],
  ['TEMPORAL_UI_URL', 'javascript:alert(1)', /got javascript:/],
  ['SUPPORT_API_KEY', 'sk_live with space', /white space or control/],
  ['SUPPORT_API_KEY', 'sk_live_abc\n', /white space or control/],
  ['SUPPORT_API_KEY', 'sk_live_\u0007bell', /white space or control/],
  ['SUPPORT_API_KEY', 'sk_live_\u200b0123456789', /must be printable ASCII, .*U\+200B/],
  ['SUPPORT_API_KEY', 'sk_live_€0123456789', /must be printable ASCII, .*U\+20AC/],
  ['TEMPORAL_API_KEY', 'tmprl_\u00e90123456789', /must be printable ASCII, .*U\+00E9/],
  ['SUPPORT_API_MAX_RESPONSE_BYTES', String(2 ** 31), /must be at most 268435456 \(256 MiB\)/],
  ['SYNC_HASH_KEY', `${HASH_KEY}\t`, /white space or control/],
  ['DESTINATION_URL', 'mysql://x', /postgres:\/\/ or bigquery/],
  ['DESTINATION_URL', 'postgres:nothing', /postgres:\/\/ or bigquery/],
  ['DESTINATION_URL', 'file:///etc/passwd', /postgres:\/\/ or bigquery/],
];

describe('settings that cannot be right', () => {
  it.each(REFUSED)('%s=%j is a config error naming it', (name, value, message) => {
    const problems = problemsOf({ ...VALID, [name]: value });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(new RegExp(`^${name}: `));
    expect(problems[0]).toMatch(message);
    // A key's value is never echoed.
    if (name.endsWith('_KEY')) expect(problems[0]).not.toContain(value.trim());
  });

  it('takes what is right: loopback http, the logged opt-in, zero durations', () => {
    expect(problemsOf({ ...VALID, SUPPORT_API_URL: 'http://127.0.0.1:8080' })).toEqual([]);
    expect(problemsOf({ ...VALID, SUPPORT_API_URL: 'http://localhost:8080' })).toEqual([]);
    expect(problemsOf({ ...VALID, SUPPORT_API_URL: 'http://[::1]:8080' })).toEqual([]);
    expect(
      problemsOf({ ...VALID, SUPPORT_API_URL: 'http://support.lan', SUPPORT_API_ALLOW_HTTP: 'true' }),
    ).toEqual([]);
    expect(problemsOf({ ...VALID, SYNC_LOOKBACK: 'PT0S' })).toEqual([]);
    const config = loadConfig({ ...VALID, DESTINATION_URL: 'postgres://u:hunter2@db:5432/x' });
    expect(JSON.stringify(config)).not.toContain('hunter2');
    expect(config.DESTINATION_URL.reveal()).toBe('postgres://u:hunter2@db:5432/x');
  });

  it('the opt-in to plain http to another machine is logged at start; https and loopback are not', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const optIn = { ...VALID, SUPPORT_API_URL: 'http://support.lan:8080', SUPPORT_API_ALLOW_HTTP: 'true' };
    warnOfPlainHttp(loadConfig(optIn), logger);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 40,
      host: 'support.lan:8080',
      msg: expect.stringContaining('SUPPORT_API_ALLOW_HTTP=true'),
    });
    warnOfPlainHttp(loadConfig(VALID), logger);
    warnOfPlainHttp(loadConfig({ ...VALID, SUPPORT_API_URL: 'http://127.0.0.1:9' }), logger);
    expect(lines).toHaveLength(1);
  });

  it('reads a --config file as text: 0x00123 stays "0x00123", null and empty leave a setting unset', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-refusals-'));
    const file = join(dir, 'settings.yaml');
    writeFileSync(
      file,
      [
        'SUPPORT_API_URL: https://support.example.com',
        'SUPPORT_API_KEY: 0x00123',
        'DESTINATION_URL: postgres://u:p@localhost:5432/db',
        'SYNC_PAGE_SIZE: 050',
        'SYNC_START_DATE:',
        'REPORT_QUERIES: ~',
      ].join('\n'),
    );
    const config = loadConfig({}, file);
    expect(config.SUPPORT_API_KEY.reveal()).toBe('0x00123');
    expect(config.SYNC_PAGE_SIZE).toBe(50);
    expect(config.SYNC_START_DATE).toBeUndefined();
    writeFileSync(file, 'SUPPORT_API_KEY: [a, b]\n');
    expect(problemsOf({ ...VALID }, file)).toEqual([
      `SUPPORT_API_KEY (in ${file}): expected a single value, not a list or mapping`,
    ]);
  });

  it('through the real CLI entry: exit 2, one line per wrong setting, each naming it', async () => {
    const result = await cli(['preflight'], {
      ...VALID,
      SYNC_LOOKBACK: 'P-5D',
      SUPPORT_API_URL: 'http://support.example.com',
      SUPPORT_API_KEY: 'sk_live_secret_with\nnewline',
      DESTINATION_URL: 'file:///etc/passwd',
    });
    expect(result.code).toBe(2);
    const lines = result.stderr.trim().split('\n');
    expect(lines.sort()).toEqual([
      expect.stringMatching(/^config error: DESTINATION_URL: /),
      expect.stringMatching(/^config error: SUPPORT_API_KEY: must not contain white space/),
      expect.stringMatching(/^config error: SUPPORT_API_URL: must be https/),
      expect.stringMatching(/^config error: SYNC_LOOKBACK: "P-5D" is negative/),
    ]);
    expect(result.stderr).not.toContain('sk_live_secret');
  }, 60_000);

  it('through the real CLI entry: a zero-width space in the key is one line naming it, the key not shown', async () => {
    const key = 'sk_live_0123456789\u200babcdef';
    const result = await cli(['preflight'], { ...VALID, SUPPORT_API_KEY: key });
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'config error: SUPPORT_API_KEY: must be printable ASCII, as it is sent in a header: it contains U+200B (from a copy and paste?)',
    );
    expect(result.stderr).not.toContain('0123456789');
    expect(result.stdout).toBe('');
  }, 60_000);

  it('through the real CLI entry: no patience, a fragment in the source URL, an unbounded body: one line each', async () => {
    const result = await cli(['preflight'], {
      ...VALID,
      SYNC_SOURCE_PATIENCE: 'PT0S',
      SUPPORT_API_URL: 'https://support.example.com/#/api',
      SUPPORT_API_MAX_RESPONSE_BYTES: String(8 * 1024 ** 3),
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n').sort()).toEqual([
      expect.stringMatching(/^config error: SUPPORT_API_MAX_RESPONSE_BYTES: must be at most 268435456 /),
      expect.stringMatching(/^config error: SUPPORT_API_URL: must not carry a #fragment/),
      expect.stringMatching(/^config error: SYNC_SOURCE_PATIENCE: must be positive/),
    ]);
  }, 60_000);

  it('through the real CLI entry: a --config file with a javascript: URL', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-refusals-'));
    const file = join(dir, 'settings.yaml');
    writeFileSync(file, stringify({ ...VALID, SUPPORT_API_URL: 'javascript:alert(1)' }));
    const result = await cli(['preflight', '--config', file], {});
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'config error: SUPPORT_API_URL: must be a https or http URL (got javascript:)',
    );
  }, 60_000);
});

describe('config parser properties', () => {
  it('a duration is taken exactly when it is not negative', () => {
    fc.assert(
      fc.property(fc.integer({ min: -400, max: 400 }), fc.integer({ min: -400, max: 400 }), (days, hours) => {
        const text = `P${days}DT${hours}H`;
        const problems = problemsOf({ ...VALID, SYNC_LOOKBACK: text });
        const ms = (days * 24 + hours) * 3_600_000;
        if (ms >= 0) expect(problems).toEqual([]);
        else
          expect(problems).toEqual([`SYNC_LOOKBACK: "${text}" is negative; a duration here is PT0S or more`]);
      }),
    );
  });

  it('an API key is taken exactly when it is printable ASCII, and is never echoed', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), (key) => {
        const problems = problemsOf({ ...VALID, SUPPORT_API_KEY: key });
        if (/[^\x21-\x7e]/.test(key)) {
          expect(problems).toHaveLength(1);
          expect(problems[0]).toMatch(/^SUPPORT_API_KEY: /);
          if (key.trim().length >= 4) expect(problems[0]).not.toContain(key.trim());
        } else expect(problems).toEqual([]);
      }),
    );
  });

  it('a source URL is taken exactly when it is https, or http to this machine', () => {
    const hosts = [
      'support.example.com',
      '10.1.2.3',
      'localhost',
      '127.0.0.1',
      '127.9.9.9',
      '[::1]',
      'api.localhost',
    ];
    // Not `api.localhost`: a resolver may send a name under .localhost anywhere.
    const loopback = new Set(['localhost', '127.0.0.1', '127.9.9.9', '[::1]']);
    fc.assert(
      fc.property(
        fc.constantFrom('https:', 'http:', 'file:', 'ftp:', 'javascript:', 'data:', 'ws:'),
        fc.constantFrom(...hosts),
        fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
        (scheme, host, port) => {
          const url = `${scheme}//${host}${port === undefined ? '' : `:${port}`}/x`;
          const ok = scheme === 'https:' || (scheme === 'http:' && loopback.has(host));
          const problems = problemsOf({ ...VALID, SUPPORT_API_URL: url });
          expect(problems.length === 0).toBe(ok);
          for (const p of problems) expect(p).toMatch(/^SUPPORT_API_URL: /);
        },
      ),
    );
  });

  it('every text written to a settings file reads back as the same text', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-roundtrip-'));
    const file = join(dir, 'settings.yaml');
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 30 }),
          fc.constantFrom('0x00123', '012', '1e3', 'true', 'null', '~', 'yes', '.inf', '1_000', '0o17'),
        ),
        (value) => {
          writeFileSync(file, stringify({ SUPPORT_API_KEY: value }));
          const read = readSettingsFile(file);
          expect(read).toEqual({ settings: { SUPPORT_API_KEY: value } });
        },
      ),
      { numRuns: 200 },
    );
  });
});
