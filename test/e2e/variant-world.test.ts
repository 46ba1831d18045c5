import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldColumnName } from '../../schemas/custom-fields-view.js';
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

  let driftAfterFirstRun = 0;
  const driftRows = async () =>
    (
      await p.db.query(
        'SELECT table_name, field_path, kind, observed, runs_seen::int AS runs_seen, first_run_id, last_run_id FROM support._schema_changes',
      )
    ).rows;

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

    // Issue 23: the drift is recorded, one row per (table, field path, kind, observed), by this run.
    const drift = await driftRows();
    const has = (table: string, path: string, kind: string, observed?: RegExp) =>
      drift.some(
        (r) =>
          r.table_name === table &&
          r.field_path === path &&
          r.kind === kind &&
          (observed === undefined || observed.test(r.observed)) &&
          r.first_run_id === summary.run_id,
      );
    expect(has('tickets', 'sla_breached_at', 'new_field')).toBe(true);
    expect(has('tickets', 'custom', 'new_field')).toBe(true);
    expect(has('tickets', 'ticket_fields.fld_order_total', 'new_custom_field')).toBe(true);
    expect(
      has(
        'ticket_messages',
        'role',
        'new_enum_value',
        /^(end_user|requester|system_user|staff|bot|ai_agent)$/,
      ),
    ).toBe(true);
    expect(has('metric_catalog', 'dataType', 'new_enum_value')).toBe(true);
    expect(drift.some((r) => r.kind === 'type_change' && r.field_path.startsWith('ticket_fields.'))).toBe(
      true,
    );
    // The custom fields of another shape are typed columns too: lookups as JSON; a number field served as
    // decimal strings has a text column (named by the field id, like every custom-field column).
    const columns = Object.fromEntries(
      (
        await p.db.query(
          `SELECT column_name, data_type FROM information_schema.columns
           WHERE table_schema = 'support' AND table_name = 'ticket_custom_fields'`,
        )
      ).rows.map((r) => [r.column_name, r.data_type]),
    );
    const refund = p.companion.world.ticketFields.find(
      (f) => f.orgId === p.companion.world.orgA.id && f.name === 'Refund amount',
    )!;
    expect(columns).toMatchObject({
      fld_order_total_json: 'jsonb',
      fld_linked_order_json: 'jsonb',
      [fieldColumnName(refund.id, 'text')]: 'text',
    });
    driftAfterFirstRun = drift.length;
  });

  it('a second run over the unchanged variant world rewrites nothing', async () => {
    const summary = await p.run('incremental');
    expect(summary.status).toBe('succeeded');
    expect(summary.streams['tickets']?.rows).toBe(0);

    // The same drift is not recorded again: no new row, and the rows the run saw again count it once.
    expect(summary.schema_changes).toBeUndefined();
    const drift = await driftRows();
    expect(drift).toHaveLength(driftAfterFirstRun);
    const sla = drift.filter((r) => r.table_name === 'tickets' && r.field_path === 'sla_breached_at');
    expect(sla).toEqual([
      expect.objectContaining({ kind: 'new_field', runs_seen: 2, last_run_id: summary.run_id }),
    ]);
    for (const r of drift.filter((x) => x.table_name === 'tickets' || x.table_name === 'metric_catalog'))
      expect(r, `${r.table_name}.${r.field_path}`).toMatchObject({ runs_seen: 2 });
  });
});
