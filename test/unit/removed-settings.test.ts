import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../worker/config.js';

const REQUIRED = {
  SUPPORT_API_URL: 'https://source.invalid',
  SUPPORT_API_KEY: 'key',
  DESTINATION_URL: 'postgres://u:p@localhost/db',
};

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig({ ...REQUIRED, ...env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

describe('a removed setting', () => {
  it('is a configuration error naming what replaces it, not a value silently ignored', () => {
    expect(problemsOf({ SUPPORT_API_BUDGET: 'queue' })).toEqual([
      expect.stringMatching(/^SUPPORT_API_BUDGET: was removed: the key's budget workflow is the only pacing/),
    ]);
    expect(problemsOf({ ANALYTICS_REQUESTS_PER_MINUTE: '10' })).toEqual([
      expect.stringMatching(/^ANALYTICS_REQUESTS_PER_MINUTE: was removed: .*SUPPORT_API_RATE_LIMITS/),
    ]);
    // Empty counts as unset (docker-compose passes `VAR=` for unset optionals).
    expect(problemsOf({ SUPPORT_API_BUDGET: '', ANALYTICS_REQUESTS_PER_MINUTE: '' })).toEqual([]);
  });

  it('makes the CLI exit 2 before it connects to anything', () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'cli/main.ts', 'status'], {
      cwd: root,
      env: { ...process.env, ...REQUIRED, SUPPORT_API_BUDGET: 'windows' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('config error: SUPPORT_API_BUDGET: was removed');
  });
});
