import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * `npm start` writes the settings it chose for its demo as a --config file, so that the replay command it
 * prints (and status) reach the running demo from another terminal.
 */
describe('the running demo as a --config file', () => {
  it('is written 0600 and loads as the same configuration', async () => {
    process.env['SUPPORT_SYNC_DATA_DIR'] = mkdtempSync(join(tmpdir(), 'demo-config-'));
    const { DEMO_CONFIG_FILE, removeDemoConfig, writeDemoConfig } = await import(
      '../../embedded/demo-config.js'
    );
    const { loadConfig } = await import('../../worker/config.js');
    const settings = {
      SUPPORT_API_URL: 'http://127.0.0.1:41234',
      SUPPORT_API_KEY: 'sk_admin_0123456789abcdef',
      DESTINATION_URL: 'postgres://postgres:secret@127.0.0.1:54329/postgres',
      TEMPORAL_ADDRESS: '127.0.0.1:41235',
      TEMPORAL_UI_URL: 'http://127.0.0.1:41236',
    };
    const file = await writeDemoConfig(settings);
    expect(statSync(DEMO_CONFIG_FILE).mode & 0o777).toBe(0o600);
    const config = loadConfig({}, file);
    expect(config.SUPPORT_API_URL).toBe(settings.SUPPORT_API_URL);
    expect(config.DESTINATION_URL.reveal()).toBe(settings.DESTINATION_URL);
    expect(config.TEMPORAL_ADDRESS).toBe(settings.TEMPORAL_ADDRESS);
    expect(config.TEMPORAL_UI_URL).toBe(settings.TEMPORAL_UI_URL);
    // Commands that embed what is not configured (a dev server, the embedded warehouse) see the file's settings
    // as configured, so `status --config .data/demo.yaml` reads the demo's warehouse instead of starting one.
    const { isConfigured } = await import('../../worker/config.js');
    expect(isConfigured('TEMPORAL_ADDRESS', file, {})).toBe(true);
    expect(isConfigured('DESTINATION_URL', file, {})).toBe(true);
    expect(isConfigured('SYNC_HASH_KEY', file, {})).toBe(false);
    expect(isConfigured('DESTINATION_URL', undefined, {})).toBe(false);
    expect(isConfigured('DESTINATION_URL', undefined, { DESTINATION_URL: 'postgres://x' })).toBe(true);
    await removeDemoConfig();
    expect(() => statSync(DEMO_CONFIG_FILE)).toThrow();
  });

  it('is named in the replay command printed for a failed window', async () => {
    const { uncoveredFailures } = await import('../../cli/display/failed-windows.js');
    const { loadConfig } = await import('../../worker/config.js');
    const config = loadConfig({
      SUPPORT_API_URL: 'http://127.0.0.1:1',
      SUPPORT_API_KEY: 'k',
      DESTINATION_URL: 'postgres://u@127.0.0.1:1/db',
    });
    const id = 'agent_sessions/2026-01-01T00:00:00.000Z/2026-04-01T00:00:00.000Z';
    const run = {
      run_id: 'r1:w',
      parent_run_id: 'r1',
      workflow_id: id,
      stream: 'agent_sessions',
      mode: 'incremental' as const,
      status: 'failed' as const,
      window_start: '2026-01-01T00:00:00.000Z',
      window_end: '2026-04-01T00:00:00.000Z',
      started_at: '2026-04-02T00:00:00.000Z',
      finished_at: '2026-04-02T00:01:00.000Z',
      error: 'HTTP 400 VALIDATION_ERROR',
    };
    const [failure] = uncoveredFailures([run as never], config, '.data/demo.yaml');
    expect(failure?.replay).toBe(`npm run cli -- replay '${id}' --wait --config .data/demo.yaml`);
  });
});
