import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';
import { sourceSnapshot } from './source-snapshot.js';
import { expectWarehouseEqualsSource } from './warehouse-compare.js';

/**
 * Issue 20: a source that reads every open point of the spec another way than our companion does
 * (companion `variant`: other contact shapes, custom-field values of any shape, roles and statuses beyond
 * the listed ones, other attachment items and view filters, reshaped directory entries, other metric
 * dataTypes, unknown fields everywhere). The sync must get all of it, with nothing set aside.
 */
describe('a variant world (the spec read differently where it is open)', () => {
  let p: Pipeline;

  beforeAll(async () => {
    p = await startPipeline('e2e_variant', {
      companion: { seed: 31, tickets: 120, variant: 1 },
      env: { SYNC_START_DATE: '', SYNC_PAGE_SIZE: '50' },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('syncs to the end: every item the API served is in the warehouse, unknown fields in _raw', async () => {
    const summary = await p.run('incremental');
    expect(summary.error).toBeUndefined();
    expect(summary.status).toBe('succeeded');
    for (const [name, s] of Object.entries(summary.streams)) expect(s.status, name).toBe('succeeded');
    const rejected = await p.db.query('SELECT count(*)::int AS n FROM support._rejected');
    expect(rejected.rows[0].n).toBe(0);
    await expectWarehouseEqualsSource(
      p.db,
      await sourceSnapshot(p.deps.client, new Date(Date.now() - 500 * DAY_MS).toISOString()),
    );

    // The open shapes reached the typed columns where they fit, and stayed whole in _raw.
    const roles = await p.db.query('SELECT DISTINCT role FROM support.ticket_messages');
    expect(roles.rows.map((r) => r.role)).toEqual(
      expect.arrayContaining([
        'customer',
        'agent',
        expect.stringMatching(/^(end_user|requester|system_user|staff|bot|ai_agent)$/),
      ]),
    );
    const contacts = await p.db.query(
      `SELECT contact_id, _raw->'contact' AS contact FROM support.tickets WHERE _raw->'contact' IS NOT NULL AND jsonb_typeof(_raw->'contact') = 'object'`,
    );
    const odd = contacts.rows.filter(
      (r) => r.contact_id !== null && !/^[0-9a-f-]{36}$/.test(String(r.contact_id)),
    );
    expect(odd.length).toBeGreaterThan(0);
    const unknownFields = await p.db.query(
      `SELECT count(*)::int AS n FROM support.tickets WHERE _raw ? 'sla_breached_at' OR _raw ? 'custom' OR _raw ? 'source'`,
    );
    expect(unknownFields.rows[0].n).toBeGreaterThan(0);
    const dataTypes = await p.db.query(`SELECT DISTINCT "dataType" AS t FROM support.metric_catalog`);
    expect(dataTypes.rows.length).toBeGreaterThan(2);
  });

  it('a second run over the unchanged variant world rewrites nothing', async () => {
    const summary = await p.run('incremental');
    expect(summary.status).toBe('succeeded');
    expect(summary.streams['tickets']?.rows).toBe(0);
  });
});
