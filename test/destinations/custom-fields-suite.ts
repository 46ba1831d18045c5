import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refreshCustomFieldView } from '../../connectors/custom-field-view.js';
import type { Destination } from '../../connectors/destination.js';
import { customFieldEntries } from '../../schemas/api/custom-fields.js';
import {
  CUSTOM_FIELD_LABELS_VIEW,
  CUSTOM_FIELDS_VIEW,
  fieldColumnName,
} from '../../schemas/custom-fields-view.js';
import { input, ticket, writeBatch } from './fixtures.js';
import type { ViewsHarness } from './views-suite.js';

/**
 * The view `ticket_custom_fields` (schemas/custom-fields-view.ts) per destination: custom fields out of
 * `tickets.ticket_fields` as one typed column per field and type of value, named by the field id and the type
 * (never the label, so a renamed label breaks no query), never an error; and `ticket_custom_field_labels`, which
 * maps each column to its field's current label.
 */

const T1 = '00000000-0000-4000-8000-00000000c001';
const T2 = '00000000-0000-4000-8000-00000000c002';
const T3 = '00000000-0000-4000-8000-00000000c003';
const T4 = '00000000-0000-4000-8000-00000000c004';
// A backslash before a quote: what a literal that only doubles quotes lets out where backslashes escape.
const EVIL_KEY = `x"\\'; DROP TABLE tickets; --`;

const tickets = [
  ticket({
    id: T1,
    ticket_number: 1,
    ticket_fields: [
      { field_id: 'fld_text', name: 'Order number', type: 'text', value: 'ORD-1' },
      { field_id: 'fld_num', name: 'Refund amount', type: 'number', value: 12.5 },
      { field_id: 'fld_bool', name: 'Warranty', type: 'boolean', value: true },
      { field_id: 'fld_date', name: 'Due date', type: 'date', value: '2025-03-10' },
      { field_id: 'fld_instant', name: 'Escalated at', value: '2025-03-02T08:00:00+01:00' },
      {
        field_id: 'fld_json',
        name: 'Linked order',
        type: 'lookup',
        value: { id: 'ord_1', name: 'Order #1' },
      },
      { field_id: 'fld_mixed', name: 'Mixed', value: 5 },
      // The same label as another field: the columns are the ids', so no clash.
      { field_id: 'fld_dup', name: 'Order number', value: 'dup' },
      { id: EVIL_KEY, label: "Evil\\'); DROP TABLE tickets; --", value: 'boom' },
    ],
  }),
  ticket({
    id: T2,
    ticket_number: 2,
    ticket_fields: [
      { field_id: 'fld_text', name: 'Order number', type: 'text', value: null },
      { field_id: 'fld_num', name: 'Refund amount', type: 'number', value: 3 },
      { field_id: 'fld_bool', name: 'Warranty', type: 'boolean', value: false },
      // Looks like a date, is none: null in the view, never an error.
      { field_id: 'fld_date', name: 'Due date', type: 'date', value: '2025-02-31' },
      { field_id: 'fld_mixed', name: 'Mixed', value: 'five' },
    ],
  }),
  // Deleted at the source: its field is no column.
  ticket({
    id: T3,
    ticket_number: 3,
    ticket_fields: [{ field_id: 'fld_gone', name: 'Gone', value: 1 }],
  }),
  // No custom fields at all.
  ticket({ id: T4, ticket_number: 4, ticket_fields: null }),
];

/** What the reader records when it first sees a custom field. */
const firstSighting = (key: string, label: string | null) => ({
  table: 'tickets' as const,
  fieldPath: `ticket_fields.${key}`,
  kind: 'new_custom_field' as const,
  observed: '',
  expected: null,
  jsonType: 'string' as const,
  example: '""',
  label,
  stream: 'tickets',
  runId: 'run-1',
});

export function customFieldsSuite(name: string, makeHarness: () => Promise<ViewsHarness>) {
  describe(`ticket_custom_fields — ${name}`, () => {
    let h: ViewsHarness;
    let dest: Destination;
    beforeAll(async () => {
      h = await makeHarness();
      dest = await h.create();
      await dest.prepare();
      // `_schema_changes` saw the "Order number" field first (it keeps the plain name), then the others.
      await writeBatch(dest, {
        table: 'tickets',
        rows: tickets.map(input),
        schemaChanges: [firstSighting('fld_text', 'Order number')],
      });
      await writeBatch(dest, {
        table: 'tickets',
        rows: [],
        schemaChanges: customFieldEntries(tickets.flatMap((t) => t.ticket_fields as unknown[]))
          .filter((f) => f.key !== 'fld_text')
          .map((f) => firstSighting(f.key, f.label)),
      });
      await dest.markDeleted({ table: 'tickets', ids: [T3] }, new Date('2025-03-04T00:00:00Z'));
    }, 600_000);
    afterAll(async () => {
      await dest?.close();
      await h?.teardown();
    });

    const EVIL = fieldColumnName(EVIL_KEY, 'text');
    const rowsOf = async (columns: string) =>
      (
        await dest.select(
          (d) =>
            `SELECT ticket_number, ${columns} FROM ${d.table(CUSTOM_FIELDS_VIEW)} ORDER BY ticket_number`,
        )
      ).map((r) => ({
        ...r,
        // The BigQuery emulator types a JSON view column STRING (the service: JSON); the JSON is the same.
        ...(typeof r['fld_json_json'] === 'string' ? { fld_json_json: JSON.parse(r['fld_json_json']) } : {}),
      }));
    const labels = async () =>
      (
        await dest.select(
          (d) =>
            `SELECT field_id, column_name, label, value_type, column_type, tickets FROM ${d.table(CUSTOM_FIELD_LABELS_VIEW)} ORDER BY field_id, column_name`,
        )
      ).map((r) => [
        r['field_id'],
        r['column_name'],
        r['label'],
        r['value_type'],
        r['column_type'],
        Number(r['tickets']),
      ]);

    it('one column per field and type of value, named by the field id and the type', async () => {
      const columns = await refreshCustomFieldView(dest);
      expect(EVIL).toMatch(/^cf_[0-9a-f]{12}_text$/);
      expect(columns.map((c) => [c.key, c.column, c.type])).toEqual([
        ['fld_text', 'fld_text_text', 'string'],
        ['fld_bool', 'fld_bool_boolean', 'boolean'],
        ['fld_date', 'fld_date_timestamp', 'timestamp'],
        ['fld_dup', 'fld_dup_text', 'string'],
        // Only a deleted ticket holds it: a column (null on every row) so nothing built on it breaks.
        ['fld_gone', 'fld_gone_number', 'float'],
        ['fld_instant', 'fld_instant_timestamp', 'timestamp'],
        ['fld_json', 'fld_json_json', 'json'],
        ['fld_mixed', 'fld_mixed_number', 'float'],
        ['fld_mixed', 'fld_mixed_text', 'string'],
        ['fld_num', 'fld_num_number', 'float'],
        [EVIL_KEY, EVIL, 'string'],
      ]);
      expect(await h.viewColumns(CUSTOM_FIELDS_VIEW)).toEqual([
        'ticket_id',
        'ticket_number',
        ...columns.map((c) => c.column),
      ]);
      const rows = (
        await dest.select((d) => `SELECT * FROM ${d.table(CUSTOM_FIELDS_VIEW)} ORDER BY ticket_number`)
      ).map(({ workspace_id: _workspace, ...r }) => ({
        // (the workspace's own rows: shared tables' workspace_id left out)
        ...r,
        fld_json_json:
          typeof r['fld_json_json'] === 'string' ? JSON.parse(r['fld_json_json']) : r['fld_json_json'],
      }));
      const none = Object.fromEntries(columns.map((c) => [c.column, null]));
      expect(rows).toEqual([
        {
          ...none,
          ticket_id: T1,
          ticket_number: 1,
          fld_text_text: 'ORD-1',
          fld_bool_boolean: true,
          fld_date_timestamp: '2025-03-10T00:00:00.000000Z',
          fld_dup_text: 'dup',
          fld_instant_timestamp: '2025-03-02T07:00:00.000000Z',
          fld_json_json: { id: 'ord_1', name: 'Order #1' },
          // A number in the number column, never as text in the text one.
          fld_mixed_number: 5,
          fld_num_number: 12.5,
          [EVIL]: 'boom',
        },
        {
          ...none,
          ticket_id: T2,
          ticket_number: 2,
          fld_bool_boolean: false,
          fld_mixed_text: 'five',
          fld_num_number: 3,
        },
        { ...none, ticket_id: T4, ticket_number: 4 },
      ]);
      // The tickets table is still there (the key travelled as a literal, the label as a literal too).
      expect(await dest.select((d) => `SELECT COUNT(*) AS n FROM ${d.table('tickets')}`)).toEqual([{ n: 4 }]);
      expect(await labels()).toEqual([
        ['fld_bool', 'fld_bool_boolean', 'Warranty', 'boolean', 'boolean', 2],
        ['fld_date', 'fld_date_timestamp', 'Due date', 'timestamp', 'timestamp', 2],
        ['fld_dup', 'fld_dup_text', 'Order number', 'text', 'string', 1],
        ['fld_gone', 'fld_gone_number', 'Gone', 'number', 'float', 1],
        ['fld_instant', 'fld_instant_timestamp', 'Escalated at', 'timestamp', 'timestamp', 1],
        ['fld_json', 'fld_json_json', 'Linked order', 'json', 'json', 1],
        ['fld_mixed', 'fld_mixed_number', 'Mixed', 'number', 'float', 1],
        ['fld_mixed', 'fld_mixed_text', 'Mixed', 'text', 'string', 1],
        ['fld_num', 'fld_num_number', 'Refund amount', 'number', 'float', 2],
        ['fld_text', 'fld_text_text', 'Order number', 'text', 'string', 1],
        [EVIL_KEY, EVIL, "Evil\\'); DROP TABLE tickets; --", 'text', 'string', 1],
      ]);
      const [labelRow] = await dest.select(
        (d) => `SELECT first_seen_at FROM ${d.table(CUSTOM_FIELD_LABELS_VIEW)} WHERE field_id = 'fld_text'`,
      );
      expect(labelRow?.['first_seen_at']).toMatch(/^\d{4}-\d\d-\d\dT/);
    });

    it('a label renamed at the source: the same column with its values, the new label in the label view', async () => {
      const before = (await refreshCustomFieldView(dest)).map((c) => c.column);
      await writeBatch(dest, {
        table: 'tickets',
        rows: [
          input(
            ticket({
              ...tickets[0],
              updated_at: '2025-03-05T00:00:00Z',
              ticket_fields: (tickets[0]!.ticket_fields as Record<string, unknown>[]).map((f) =>
                f['field_id'] === 'fld_num' ? { ...f, name: 'Refund total', value: 20 } : f,
              ),
            }),
          ),
        ],
        schemaChanges: [],
      });
      const columns = await refreshCustomFieldView(dest);
      expect(columns.map((c) => c.column)).toEqual(before);
      // A dashboard's query written before the rename, unchanged: T2 (not re-read) keeps its value.
      expect(await rowsOf('fld_num_number')).toEqual([
        { ticket_number: 1, fld_num_number: 20 },
        { ticket_number: 2, fld_num_number: 3 },
        { ticket_number: 4, fld_num_number: null },
      ]);
      expect((await labels()).filter((r) => r[0] === 'fld_num')).toEqual([
        ['fld_num', 'fld_num_number', 'Refund total', 'number', 'float', 2],
      ]);
      expect(columns.find((c) => c.key === 'fld_num')?.label).toBe('Refund total');
    });

    it('a field retyped at the source: a second column; the first keeps its values, and stays when none is left', async () => {
      // The warranty becomes a text field: T2 is re-read with text, T1 still holds its boolean.
      await writeBatch(dest, {
        table: 'tickets',
        rows: [
          input(
            ticket({
              ...tickets[1],
              updated_at: '2025-03-05T00:00:00Z',
              ticket_fields: (tickets[1]!.ticket_fields as Record<string, unknown>[]).map((f) =>
                f['field_id'] === 'fld_bool' ? { ...f, type: 'text', value: 'extended' } : f,
              ),
            }),
          ),
        ],
        schemaChanges: [],
      });
      let columns = await refreshCustomFieldView(dest);
      expect(columns.filter((c) => c.key === 'fld_bool').map((c) => [c.column, c.type])).toEqual([
        ['fld_bool_boolean', 'boolean'],
        ['fld_bool_text', 'string'],
      ]);
      expect(await rowsOf('fld_bool_boolean, fld_bool_text')).toEqual([
        { ticket_number: 1, fld_bool_boolean: true, fld_bool_text: null },
        { ticket_number: 2, fld_bool_boolean: null, fld_bool_text: 'extended' },
        { ticket_number: 4, fld_bool_boolean: null, fld_bool_text: null },
      ]);
      // T1 re-read as text too: no stored ticket holds a boolean any more, and the column stays (all null).
      await writeBatch(dest, {
        table: 'tickets',
        rows: [
          input(
            ticket({
              ...tickets[0],
              updated_at: '2025-03-06T00:00:00Z',
              ticket_fields: (tickets[0]!.ticket_fields as Record<string, unknown>[]).map((f) =>
                f['field_id'] === 'fld_bool' ? { ...f, type: 'text', value: 'standard' } : f,
              ),
            }),
          ),
        ],
        schemaChanges: [],
      });
      columns = await refreshCustomFieldView(dest);
      expect(columns.filter((c) => c.key === 'fld_bool').map((c) => [c.column, c.tickets])).toEqual([
        ['fld_bool_boolean', 0],
        ['fld_bool_text', 2],
      ]);
      expect(await rowsOf('fld_bool_boolean, fld_bool_text')).toEqual([
        { ticket_number: 1, fld_bool_boolean: null, fld_bool_text: 'standard' },
        { ticket_number: 2, fld_bool_boolean: null, fld_bool_text: 'extended' },
        { ticket_number: 4, fld_bool_boolean: null, fld_bool_text: null },
      ]);
      expect((await labels()).filter((r) => r[0] === 'fld_bool')).toEqual([
        ['fld_bool', 'fld_bool_boolean', 'Warranty', 'boolean', 'boolean', 0],
        ['fld_bool', 'fld_bool_text', 'Warranty', 'text', 'string', 2],
      ]);
    });

    it('a field that appears is a new column; the columns charted before keep their names', async () => {
      const before = (await refreshCustomFieldView(dest)).map((c) => c.column);
      await writeBatch(dest, {
        table: 'tickets',
        rows: [
          input(
            ticket({
              ...tickets[3],
              updated_at: '2025-03-06T00:00:00Z',
              ticket_fields: [{ field_id: 'fld_new', name: 'Due date', value: true }],
            }),
          ),
        ],
        schemaChanges: [{ ...firstSighting('fld_new', 'Due date'), runId: 'run-2' }],
      });
      const columns = await refreshCustomFieldView(dest);
      expect(columns.map((c) => c.column)).toEqual([...before, 'fld_new_boolean']);
      const [row] = await dest.select(
        (d) =>
          `SELECT fld_new_boolean, fld_date_timestamp FROM ${d.table(CUSTOM_FIELDS_VIEW)} WHERE ticket_number = 4`,
      );
      expect(row).toEqual({ fld_new_boolean: true, fld_date_timestamp: null });
    });
  });
}
