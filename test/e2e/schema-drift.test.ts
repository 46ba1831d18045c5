import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TicketFieldDefinition, TicketRecord } from '../../companion/world/types.js';
import { fieldColumnName, type ValueClass } from '../../schemas/custom-fields-view.js';
import { testTemporalAddress } from '../support/temporal.js';
import { cli } from './cli.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';

/**
 * Issue 23, schema drift recorded and usable: the reader records in `_schema_changes` what the source serves
 * beyond the connector's schema, and custom ticket fields become typed columns of `ticket_custom_fields`,
 * regenerated after the run that saw a new one. Here the default world (the schema the connector knows) and
 * a field an admin adds at the source; the variant world's drift is in variant-world.test.ts.
 */
describe('schema drift: _schema_changes and the typed custom-field view', () => {
  let p: Pipeline;
  let fields: TicketFieldDefinition[];
  const liveTickets = () =>
    p.companion.world.tickets.filter((t) => t.orgId === p.companion.world.orgA.id && t.deletedAt === null);
  const changes = async () =>
    (
      await p.db.query(
        'SELECT table_name, field_path, kind, observed, label, runs_seen::int AS runs_seen, first_run_id, last_run_id FROM support._schema_changes ORDER BY field_path',
      )
    ).rows;
  const viewColumns = async () =>
    Object.fromEntries(
      (
        await p.db.query(
          `SELECT column_name, data_type FROM information_schema.columns
           WHERE table_schema = 'support' AND table_name = 'ticket_custom_fields' ORDER BY ordinal_position`,
        )
      ).rows.map((r) => [r.column_name, r.data_type]),
    );
  /** The view's row of each live ticket, keyed by ticket number. */
  const viewRows = async (columns: string[]) =>
    new Map(
      (
        await p.db.query(
          `SELECT ticket_number, ${columns.join(', ')} FROM support.ticket_custom_fields ORDER BY ticket_number`,
        )
      ).rows.map(({ ticket_number, ...values }) => [Number(ticket_number), values]),
    );
  /** The view column of a field's values of one type: named by the field id, never its label. */
  const column = (name: string, valueClass: ValueClass) =>
    fieldColumnName(fields.find((f) => f.name === name)!.id, valueClass);
  const fieldValue = (t: TicketRecord, field: TicketFieldDefinition) =>
    t.fieldValues[fields.indexOf(field)] ?? null;

  beforeAll(async () => {
    p = await startPipeline('e2e_schema_drift', { companion: { seed: 23, tickets: 60 } });
    fields = p.companion.world.ticketFields.filter((f) => f.orgId === p.companion.world.orgA.id);
  });
  afterAll(async () => {
    await p?.close();
  });

  it('the schema the connector knows: no drift but the workspace custom fields, each a typed column', async () => {
    const summary = await p.run('incremental');
    expect(summary.status).toBe('succeeded');
    // The default world serves exactly what the schemas know: the only rows are its four custom fields.
    expect(await changes()).toEqual(
      fields
        .map((f) => ({
          table_name: 'tickets',
          field_path: `ticket_fields.${f.id}`,
          kind: 'new_custom_field',
          observed: '',
          label: f.name,
          runs_seen: 1,
          first_run_id: summary.run_id,
          last_run_id: summary.run_id,
        }))
        .sort((a, b) => (a.field_path < b.field_path ? -1 : 1)),
    );
    expect(summary.schema_changes).toMatchObject({ recorded: 4, customFieldColumns: 4 });

    // Typed from the values: text, a dropdown's text, a number, a boolean.
    const typed = [
      [column('Order number', 'text'), 'text'],
      [column('Product', 'text'), 'text'],
      [column('Refund amount', 'number'), 'double precision'],
      [column('Warranty', 'boolean'), 'boolean'],
    ].sort(
      (a, b) =>
        fields.findIndex((f) => a[0]!.startsWith(f.id)) - fields.findIndex((f) => b[0]!.startsWith(f.id)),
    );
    expect(await viewColumns()).toEqual({
      ticket_id: 'text',
      ticket_number: 'bigint',
      ...Object.fromEntries(typed),
    });
    const byName = (name: string) => fields.find((f) => f.name === name)!;
    const rows = await viewRows(typed.map(([c]) => c!));
    expect(rows.size).toBe(liveTickets().length);
    for (const t of liveTickets())
      expect(rows.get(t.number)).toEqual({
        [column('Order number', 'text')]: fieldValue(t, byName('Order number')),
        [column('Product', 'text')]: fieldValue(t, byName('Product')),
        [column('Refund amount', 'number')]: fieldValue(t, byName('Refund amount')),
        [column('Warranty', 'boolean')]: fieldValue(t, byName('Warranty')),
      });
    // The label view maps each column to the label a person reads.
    const labels = await p.db.query(
      'SELECT column_name, label FROM support.ticket_custom_field_labels ORDER BY column_name',
    );
    expect(labels.rows).toEqual(
      typed
        .map(([c]) => ({ column_name: c, label: fields.find((f) => c!.startsWith(f.id))!.name }))
        .sort((a, b) => (a.column_name! < b.column_name! ? -1 : 1)),
    );
  });

  it('a field added at the source: one new row, a new typed column after the run; the others counted again, not repeated', async () => {
    const world = p.companion.world;
    const due = (t: TicketRecord) =>
      t.number % 4 === 0 ? null : new Date(t.createdAt + 7 * DAY_MS).toISOString().slice(0, 10);
    const added = world.addTicketField(world.orgA.id, { name: 'Due date', type: 'date', options: [] }, due);
    fields = world.ticketFields.filter((f) => f.orgId === world.orgA.id);

    const summary = await p.run('incremental');
    expect(summary.status).toBe('succeeded');
    expect(summary.schema_changes).toEqual({
      recorded: 1,
      changes: [`new_custom_field tickets.ticket_fields.${added.id} ("Due date")`],
      customFieldColumns: 5,
    });
    const rows = await changes();
    expect(rows).toHaveLength(5);
    expect(rows.find((r) => r.field_path === `ticket_fields.${added.id}`)).toMatchObject({
      kind: 'new_custom_field',
      runs_seen: 1,
      first_run_id: summary.run_id,
    });
    for (const r of rows.filter((x) => x.field_path !== `ticket_fields.${added.id}`))
      expect(r).toMatchObject({ runs_seen: 2, last_run_id: summary.run_id });

    const dueColumn = fieldColumnName(added.id, 'timestamp');
    expect(await viewColumns()).toMatchObject({
      [dueColumn]: 'timestamp with time zone',
      [column('Warranty', 'boolean')]: 'boolean',
    });
    const view = await viewRows([dueColumn]);
    for (const t of liveTickets()) {
      const expected = due(t);
      expect(view.get(t.number)?.[dueColumn] ?? null, `ticket ${t.number}`).toEqual(
        expected === null ? null : new Date(`${expected}T00:00:00Z`),
      );
    }

    // `status` lists it, newest first, with the runs that saw it.
    const env = {
      SUPPORT_API_URL: p.companion.baseUrl,
      SUPPORT_API_KEY: p.companion.keys.admin,
      DESTINATION_URL: p.databaseUrl,
      TEMPORAL_ADDRESS: testTemporalAddress(),
    };
    const status = await cli(['status'], env);
    console.info(`schema drift: status printed\n${status.stdout}`);
    expect(status.code).toBe(0);
    const lines = status.stdout.split('\n');
    const header = lines.findIndex((l) => l.startsWith('Schema changes (_schema_changes, 5, newest first;'));
    expect(header).toBeGreaterThan(0);
    expect(lines[header + 1]).toMatch(
      new RegExp(
        `new_custom_field\\s+tickets\\.ticket_fields\\.${added.id} "Due date"; runs 1, last .*, e\\.g\\. "\\d{4}-\\d{2}-\\d{2}"$`,
      ),
    );
    expect(lines.slice(header + 2, header + 6).every((l) => /new_custom_field .*; runs 2,/.test(l))).toBe(
      true,
    );

    // A warehouse an older version prepared has no _schema_changes yet: status (which runs no DDL) says so.
    await p.db.query('DROP TABLE support._schema_changes');
    const older = await cli(['status'], env);
    expect({ code: older.code, stderr: older.stderr }).toEqual({ code: 0, stderr: '' });
    expect(older.stdout).toContain(
      'Schema changes (_schema_changes): none recorded yet (the next sync creates the table)',
    );
  });
});
