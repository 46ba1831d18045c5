import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Destination } from '../../connectors/destination.js';
import { customFieldEntries } from '../../schemas/api/custom-fields.js';
import { CUSTOM_FIELDS_VIEW } from '../../schemas/custom-fields-view.js';
import { input, ticket } from './fixtures.js';
import type { ViewsHarness } from './views-suite.js';

/**
 * The view `ticket_custom_fields` (schemas/custom-fields-view.ts) per destination: custom fields out of
 * `tickets.ticket_fields` as one typed column per field, named after the label (sanitised, de-duplicated in the
 * order `_schema_changes` first saw the fields), typed from the values of the live tickets, never an error.
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
      // Another label that makes the same column name: it gets a suffix.
      { field_id: 'fld_dup', name: 'Order Number!', value: 'dup' },
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
      await dest.writeBatch({
        table: 'tickets',
        rows: tickets.map(input),
        schemaChanges: [firstSighting('fld_text', 'Order number')],
      });
      await dest.writeBatch({
        table: 'tickets',
        rows: [],
        schemaChanges: customFieldEntries(tickets.flatMap((t) => t.ticket_fields as unknown[]))
          .filter((f) => f.key !== 'fld_text')
          .map((f) => firstSighting(f.key, f.label)),
      });
      await dest.markDeleted('tickets', [T3], new Date('2025-03-04T00:00:00Z'));
    }, 600_000);
    afterAll(async () => {
      await dest?.close();
      await h?.teardown();
    });

    it('one column per field of the live tickets, named after its label, typed from its values', async () => {
      const columns = await dest.refreshCustomFieldView();
      expect(columns.map((c) => [c.key, c.column, c.type])).toEqual([
        ['fld_text', 'order_number', 'string'],
        ['fld_bool', 'warranty', 'boolean'],
        ['fld_date', 'due_date', 'timestamp'],
        ['fld_dup', 'order_number_2', 'string'],
        ['fld_instant', 'escalated_at', 'timestamp'],
        ['fld_json', 'linked_order', 'json'],
        ['fld_mixed', 'mixed', 'string'],
        ['fld_num', 'refund_amount', 'float'],
        [EVIL_KEY, 'evil_drop_table_tickets', 'string'],
      ]);
      expect(await h.viewColumns(CUSTOM_FIELDS_VIEW)).toEqual([
        'ticket_id',
        'ticket_number',
        ...columns.map((c) => c.column),
      ]);
      const rows = (
        await dest.select((d) => `SELECT * FROM ${d.table(CUSTOM_FIELDS_VIEW)} ORDER BY ticket_number`)
      ).map((r) => ({
        ...r,
        // The BigQuery emulator types this view column STRING (the service: JSON); the JSON is the same.
        linked_order:
          typeof r['linked_order'] === 'string' ? JSON.parse(r['linked_order']) : r['linked_order'],
      }));
      expect(rows).toEqual([
        {
          ticket_id: T1,
          ticket_number: 1,
          order_number: 'ORD-1',
          warranty: true,
          due_date: '2025-03-10T00:00:00.000000Z',
          order_number_2: 'dup',
          escalated_at: '2025-03-02T07:00:00.000000Z',
          linked_order: { id: 'ord_1', name: 'Order #1' },
          mixed: '5',
          refund_amount: 12.5,
          evil_drop_table_tickets: 'boom',
        },
        {
          ticket_id: T2,
          ticket_number: 2,
          order_number: null,
          warranty: false,
          due_date: null,
          order_number_2: null,
          escalated_at: null,
          linked_order: null,
          mixed: 'five',
          refund_amount: 3,
          evil_drop_table_tickets: null,
        },
        {
          ticket_id: T4,
          ticket_number: 4,
          order_number: null,
          warranty: null,
          due_date: null,
          order_number_2: null,
          escalated_at: null,
          linked_order: null,
          mixed: null,
          refund_amount: null,
          evil_drop_table_tickets: null,
        },
      ]);
      // The tickets table is still there (the label and key travelled as a name and a literal, not as SQL).
      expect(await dest.select((d) => `SELECT COUNT(*) AS n FROM ${d.table('tickets')}`)).toEqual([{ n: 4 }]);
    });

    it('a field that appears is a new column, after the others; the columns charted before keep their names', async () => {
      await dest.writeBatch({
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
      const columns = await dest.refreshCustomFieldView();
      expect(columns.map((c) => [c.column, c.type])).toEqual([
        ['order_number', 'string'],
        ['warranty', 'boolean'],
        ['due_date', 'timestamp'],
        ['order_number_2', 'string'],
        ['escalated_at', 'timestamp'],
        ['linked_order', 'json'],
        ['mixed', 'string'],
        ['refund_amount', 'float'],
        ['evil_drop_table_tickets', 'string'],
        ['due_date_2', 'boolean'],
      ]);
      const [row] = await dest.select(
        (d) => `SELECT due_date_2, order_number FROM ${d.table(CUSTOM_FIELDS_VIEW)} WHERE ticket_number = 4`,
      );
      expect(row).toEqual({ due_date_2: true, order_number: null });
    });
  });
}
