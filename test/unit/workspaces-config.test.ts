import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Activities } from '../../activities/index.js';
import type { Config } from '../../schemas/config.js';
import { ConfigError, loadConfig, workspaceConfigLoader } from '../../worker/config.js';
import { WorkspaceRouter } from '../../worker/workspace-router.js';

/**
 * SYNC_WORKSPACES_FILE: a workspace of it is the deployment's configuration with its entry's URL, key,
 * schema and settings, validated by the same schema, every problem naming the file, the workspace and the
 * field, never the key.
 */

const KEY = 'sk_live_deployment_0123456789';
const NORTH_KEY = 'sk_live_north_0123456789abcd';

function folderWith(files: Record<string, string>): string {
  const folder = mkdtempSync(join(tmpdir(), 'workspaces-config-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(folder, name), text);
  return folder;
}

function deployment(file: string, extra: Record<string, string> = {}) {
  return {
    SUPPORT_API_URL: 'https://home.example.com',
    SUPPORT_API_KEY: KEY,
    DESTINATION_URL: 'postgres://u:p@localhost:5432/db',
    SYNC_WORKSPACES_FILE: file,
    NORTH_KEY,
    ...extra,
  };
}

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
}

const NORTH = [
  'workspaces:',
  '  - id: north',
  '    url: https://north.example.com',
  '    key: { env: NORTH_KEY }',
  '    settings:',
  '      SYNC_STREAMS: tickets,ticket_messages',
  '      SUPPORT_API_RATE_SHARE: 0.5',
  '      SYNC_BUSINESS_HOURS: hours.yaml',
  '  - id: south-east',
  '    url: https://south.example.com',
  '    key: { file: south.key }',
  '    schema: desk_se',
  '',
].join('\n');
const HOURS = 'timezone: Europe/Oslo\nhours:\n  monday: [09:00-17:00]\n';

describe('SYNC_WORKSPACES_FILE', () => {
  it("the deployment's own settings are the workspace `default`, unchanged by the file", () => {
    const folder = folderWith({
      'w.yaml': NORTH,
      'hours.yaml': HOURS,
      'south.key': 'sk_south_key_0123456789\n',
    });
    const config = loadConfig(deployment(join(folder, 'w.yaml')));
    expect(config.SYNC_WORKSPACE).toBe('default');
    expect(config.SUPPORT_API_URL).toBe('https://home.example.com');
    expect(config.POSTGRES_SCHEMA).toBe('support');
  });

  it('a workspace takes its URL, key, schema and settings from its entry; paths are relative to the file', () => {
    const folder = folderWith({
      'w.yaml': NORTH,
      'hours.yaml': HOURS,
      'south.key': 'sk_south_key_0123456789\n',
    });
    const env = deployment(join(folder, 'w.yaml'));
    const north = loadConfig({ ...env, SYNC_WORKSPACE: 'north' });
    expect(north.SUPPORT_API_URL).toBe('https://north.example.com');
    expect(north.SUPPORT_API_KEY.reveal()).toBe(NORTH_KEY);
    expect(north.POSTGRES_SCHEMA).toBe('support_north');
    expect(north.SYNC_STREAMS).toEqual(['tickets', 'ticket_messages']);
    expect(north.SUPPORT_API_RATE_SHARE).toBe(0.5);
    expect(north.SYNC_BUSINESS_HOURS?.path).toBe(join(folder, 'hours.yaml'));
    const south = workspaceConfigLoader(loadConfig(env))('south-east');
    expect(south.SUPPORT_API_KEY.reveal()).toBe('sk_south_key_0123456789');
    expect(south.POSTGRES_SCHEMA).toBe('desk_se');
    // Not set by the entry: the deployment's.
    expect(south.SYNC_STREAMS).toEqual(loadConfig(env).SYNC_STREAMS);
  });

  it('on BigQuery a workspace gets a dataset of its own in the same project', () => {
    const folder = folderWith({ 'w.yaml': NORTH, 'hours.yaml': HOURS, 'south.key': 'k_south_0123456789\n' });
    const env = deployment(join(folder, 'w.yaml'), { DESTINATION_URL: 'bigquery://proj/support' });
    expect(loadConfig({ ...env, SYNC_WORKSPACE: 'north' }).DESTINATION_URL.reveal()).toBe(
      'bigquery://proj/support_north',
    );
    expect(loadConfig({ ...env, SYNC_WORKSPACE: 'south-east' }).DESTINATION_URL.reveal()).toBe(
      'bigquery://proj/desk_se',
    );
    // A dataset the sync creates for a workspace goes where the deployment's dataset is.
    expect(loadConfig({ ...env, SYNC_WORKSPACE: 'north' }).BIGQUERY_DEPLOYMENT_DATASET).toBe('support');
    expect(loadConfig(env).BIGQUERY_DEPLOYMENT_DATASET).toBeUndefined();
  });

  it("never gives a workspace another's tables: the deployment's schema, or another entry's derived one", () => {
    const entry = (id: string, schema?: string) => [
      `  - id: ${id}`,
      '    url: https://x.example.com',
      '    key: { env: NORTH_KEY }',
      ...(schema ? [`    schema: ${schema}`] : []),
    ];
    const file = (...entries: string[][]) => ['workspaces:', ...entries.flat(), ''].join('\n');
    const folder = folderWith({
      'derived.yaml': file(entry('north'), entry('south', 'support_north')),
      'own.yaml': file(entry('north', 'support')),
      'bq.yaml': file(entry('north'), entry('south', 'support_north')),
    });
    expect(problemsOf({ ...deployment(join(folder, 'derived.yaml')), SYNC_WORKSPACE: 'south' })).toEqual([
      `SYNC_WORKSPACES_FILE ${join(folder, 'derived.yaml')}: workspace "south": schema "support_north" is workspace "north"'s too: two workspaces never share tables`,
    ]);
    // Either of the two is refused, whichever a command names.
    expect(problemsOf({ ...deployment(join(folder, 'derived.yaml')), SYNC_WORKSPACE: 'north' })).toHaveLength(
      1,
    );
    expect(problemsOf({ ...deployment(join(folder, 'own.yaml')), SYNC_WORKSPACE: 'north' })[0]).toMatch(
      /workspace "north": schema "support" is the deployment's own/,
    );
    const bigquery = deployment(join(folder, 'bq.yaml'), { DESTINATION_URL: 'bigquery://proj/support' });
    expect(problemsOf({ ...bigquery, SYNC_WORKSPACE: 'south' })[0]).toMatch(
      /"support_north" is workspace "north"'s too/,
    );
  });

  it("shared tables: every workspace in the deployment's schema (BigQuery: dataset); an entry naming a schema is refused", () => {
    const folder = folderWith({ 'w.yaml': NORTH, 'hours.yaml': HOURS, 'south.key': 'k_south_0123456789\n' });
    const env = deployment(join(folder, 'w.yaml'), { SYNC_WAREHOUSE_LAYOUT: 'shared-tables' });
    const north = loadConfig({ ...env, SYNC_WORKSPACE: 'north' });
    expect([north.POSTGRES_SCHEMA, north.SYNC_WAREHOUSE_LAYOUT, north.SYNC_WORKSPACE]).toEqual([
      'support',
      'shared-tables',
      'north',
    ]);
    expect(loadConfig(env).SYNC_WAREHOUSE_LAYOUT).toBe('shared-tables');
    expect(loadConfig(deployment(join(folder, 'w.yaml'))).SYNC_WAREHOUSE_LAYOUT).toBe('schema-per-workspace');
    expect(problemsOf({ ...env, SYNC_WORKSPACE: 'south-east' })).toEqual([
      `SYNC_WORKSPACES_FILE ${join(folder, 'w.yaml')}: workspace "south-east": schema "desk_se": with SYNC_WAREHOUSE_LAYOUT=shared-tables every workspace is in the deployment's schema; remove the entry's schema`,
    ]);
    const onBigQuery = { ...env, DESTINATION_URL: 'bigquery://proj/support' };
    expect(problemsOf(onBigQuery)).toEqual([]);
    const northOnBigQuery = loadConfig({ ...onBigQuery, SYNC_WORKSPACE: 'north' });
    expect([northOnBigQuery.DESTINATION_URL.reveal(), northOnBigQuery.BIGQUERY_DEPLOYMENT_DATASET]).toEqual([
      'bigquery://proj/support',
      undefined,
    ]);
  });

  it('every problem names the file, the workspace and the field, never a key', () => {
    const folder = folderWith({
      'bad.yaml': [
        'workspaces:',
        '  - id: North',
        '    url: https://north.example.com',
        '    key: sk_live_in_the_file_0123456789',
        '  - id: default',
        '    url: https://x.example.com',
        '    key: { env: X }',
        '  - id: west',
        '    url: https://west.example.com',
        '    key: { env: WEST_KEY }',
        '    settings: { TEMPORAL_ADDRESS: "evil:7233" }',
        '',
      ].join('\n'),
      'ok.yaml': NORTH,
      'hours.yaml': HOURS,
      'south.key': '',
    });
    const bad = problemsOf({ ...deployment(join(folder, 'bad.yaml')), SYNC_WORKSPACE: 'north' });
    expect(bad.join('\n')).toMatch(/bad\.yaml: entry 1 \("North"\): id: must be a slug/);
    expect(bad.join('\n')).toMatch(/entry 1 \("North"\): key:/);
    expect(bad.join('\n')).toMatch(/entry 2 \("default"\): id: "default" is the workspace of the deployment/);
    expect(bad.join('\n')).toMatch(/entry 3 \("west"\): settings/);
    expect(bad.join('\n')).not.toContain('sk_live_in_the_file');

    const ok = join(folder, 'ok.yaml');
    expect(problemsOf({ ...deployment(ok), SYNC_WORKSPACE: 'west' })).toEqual([
      `SYNC_WORKSPACE: "west" is not in ${ok} (its workspaces: north, south-east)`,
    ]);
    expect(problemsOf({ ...deployment(ok), NORTH_KEY: '', SYNC_WORKSPACE: 'north' })).toEqual([
      `SYNC_WORKSPACES_FILE ${ok}: workspace "north": key: the environment variable NORTH_KEY is not set (or empty)`,
    ]);
    expect(problemsOf({ ...deployment(ok), SYNC_WORKSPACE: 'south-east' })).toEqual([
      `SYNC_WORKSPACES_FILE ${ok}: workspace "south-east": key: ${join(folder, 'south.key')} is empty`,
    ]);
    // A key that reaches the schema wrong: named as the workspace's setting, the key never shown.
    const spaced = problemsOf({ ...deployment(ok), NORTH_KEY: 'sk north', SYNC_WORKSPACE: 'north' });
    expect(spaced).toEqual([
      expect.stringMatching(/^workspace "north": SUPPORT_API_KEY: must not contain white space/),
    ]);
    expect(problemsOf({ ...deployment(join(folder, 'none.yaml')), SYNC_WORKSPACE: 'north' })).toEqual([
      `SYNC_WORKSPACES_FILE ${join(folder, 'none.yaml')}: cannot read the file (ENOENT)`,
    ]);
    const noFile = deployment('');
    expect(problemsOf({ ...noFile, SYNC_WORKSPACE: 'north' })).toEqual([
      'SYNC_WORKSPACE: "north" needs SYNC_WORKSPACES_FILE, the file that lists its workspace',
    ]);
    expect(problemsOf({ ...noFile, SYNC_WORKSPACE: 'No Such' })).toEqual([
      expect.stringMatching(/^SYNC_WORKSPACE: must be a slug/),
    ]);
  });
});

describe('the workspace router', () => {
  const activitiesOf = (name: string) =>
    ({ planRun: async () => name, recordRun: async () => name }) as unknown as Activities;
  const configOf = (urls: Record<string, string>) => (workspace: string) => {
    const url = urls[workspace];
    if (!url) throw new ConfigError([`SYNC_WORKSPACE: "${workspace}" is not in the file`]);
    return { SUPPORT_API_URL: url, SYNC_WORKSPACE: workspace } as unknown as Config;
  };

  it('builds a workspace at its first activity, rebuilds it when its entry changes, closes what it leaves', async () => {
    let now = 0;
    const urls: Record<string, string> = { north: 'https://n1' };
    const built: string[] = [];
    const closed: string[] = [];
    const router = new WorkspaceRouter({
      own: { workspace: 'default', dependencies: { activities: activitiesOf('own'), close: async () => {} } },
      configOf: configOf(urls),
      build: async (config) => {
        const name = `${config.SYNC_WORKSPACE}@${config.SUPPORT_API_URL}`;
        built.push(name);
        return { activities: activitiesOf(name), close: async () => void closed.push(name) };
      },
      logger: pino({ level: 'silent' }),
      recheckMs: 1000,
      idleMs: 10_000,
      now: () => now,
    });
    expect(await (await router.dependenciesOf('default')).activities.planRun({} as never)).toBe('own');
    await router.dependenciesOf('north');
    await router.dependenciesOf('north');
    expect(built).toEqual(['north@https://n1']);
    // Within the recheck, an edit is not read yet; after it, the new entry is built.
    urls['north'] = 'https://n2';
    now = 500;
    await router.dependenciesOf('north');
    now = 1500;
    expect(await (await router.dependenciesOf('north')).activities.planRun({} as never)).toBe(
      'north@https://n2',
    );
    expect(built).toEqual(['north@https://n1', 'north@https://n2']);
    // Removed from the file: its activities fail with the problem, nobody else's.
    delete urls['north'];
    now = 3000;
    await expect(router.dependenciesOf('north')).rejects.toThrow(/"north" is not in the file/);
    expect((await router.dependenciesOf('default')).activities).toBeDefined();
    // Idle past idleMs: closed.
    urls['south'] = 'https://s';
    await router.dependenciesOf('south');
    now = 20_000;
    urls['east'] = 'https://e';
    await router.dependenciesOf('east');
    expect(closed).toContain('south@https://s');
    await router.close();
    expect(closed).toContain('east@https://e');
    expect(router.served()).toEqual(['default']);
  });
});
