import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TEMPORAL_CLI_VERSION } from '../../embedded/temporal-cli.js';
import { ConfigFromEnv } from '../../schemas/config.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';

// No Docker engine runs here, so we check what can be checked: the file parses, has the three services,
// and the worker's environment matches the configuration schema (no typo'd or missing variable).
const compose = parse(readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8'));

describe('docker-compose.yml', () => {
  it('defines the Temporal dev server with UI, PostgreSQL and the worker built from the repo', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['postgres', 'temporal', 'worker']);
    expect(compose.services.temporal.command).toContain('start-dev');
    expect(compose.services.temporal.ports).toContain('127.0.0.1:8233:8233');
    expect(compose.services.worker.build).toBe('.');
  });

  it('runs the same Temporal CLI version as the embedded dev server', () => {
    expect(compose.services.temporal.image).toBe(`temporalio/temporal:${TEMPORAL_CLI_VERSION}`);
  });

  it('sets only variables the config schema knows, including every required one', () => {
    const known = Object.keys(ConfigFromEnv.shape);
    const set = Object.keys(compose.services.worker.environment);
    expect(set.filter((name) => !known.includes(name))).toEqual([]);
    const required = known.filter(
      (name) => !ConfigFromEnv.shape[name as keyof typeof ConfigFromEnv.shape].safeParse(undefined).success,
    );
    expect(required.filter((name) => !set.includes(name))).toEqual([]);
  });

  it('registers every search attribute the workflows set', () => {
    const flags = (compose.services.temporal.command as string[]).filter((a) =>
      a.startsWith('--search-attribute='),
    );
    expect(flags.map((f) => f.split('=')[1]).sort()).toEqual(SEARCH_ATTRIBUTES.map((k) => k.name).sort());
  });

  it('publishes every port on the loopback interface only', () => {
    const ports = Object.values(compose.services as Record<string, { ports?: string[] }>).flatMap(
      (service) => service.ports ?? [],
    );
    expect(ports.length).toBeGreaterThan(0);
    expect(ports.filter((p) => !p.startsWith('127.0.0.1:'))).toEqual([]);
  });

  it('ships no password: PostgreSQL and the worker take it from the environment', () => {
    expect(compose.services.postgres.environment.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?/);
    expect(compose.services.worker.environment.DESTINATION_URL).toContain(':${POSTGRES_PASSWORD:?');
  });

  it('points the worker at the compose PostgreSQL in schema support', () => {
    const env = compose.services.worker.environment;
    expect(env.DESTINATION_URL).toMatch(/^postgres:\/\/.+@postgres:5432\//);
    expect(env.POSTGRES_SCHEMA).toBe('support');
  });
});
