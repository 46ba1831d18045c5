import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshDatabase } from '../support/postgres.js';

describe('PostgreSQL provisioned by the project', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: await freshDatabase('foundation') });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  it('round-trips a row with unicode and JSON', async () => {
    await client.query('CREATE TABLE t (id text PRIMARY KEY, body jsonb NOT NULL, at timestamptz NOT NULL)');
    const body = { text: 'Grüße 👋 — "quoted"', n: 1.5 };
    await client.query('INSERT INTO t VALUES ($1, $2, $3)', ['a', body, '2026-11-22T10:00:00.123456Z']);
    const { rows } = await client.query('SELECT id, body, at FROM t');
    expect(rows).toEqual([{ id: 'a', body, at: new Date('2026-11-22T10:00:00.123Z') }]);
  });

  it('gives each test file its own database', async () => {
    const { rows } = await client.query('SELECT current_database() AS db');
    expect(rows[0].db).toMatch(/^foundation_[0-9a-f]{8}$/);
  });
});
