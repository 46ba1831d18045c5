import { describe, expect, it } from 'vitest';
import type { ActivityDeps } from '../../activities/deps.js';
import { recordedDrift } from '../../activities/recorded-drift.js';
import { scrubDrift } from '../../connectors/support-api/parse.js';
import { driftOf, exampleOf, MAX_DRIFT_PER_PAGE } from '../../schemas/api/drift.js';
import { Agent, Message, Ticket } from '../../schemas/api/index.js';
import { customFieldColumns, fieldColumnName } from '../../schemas/custom-fields-view.js';
import { Secret } from '../../schemas/secret.js';
import { sighting } from '../destinations/fixtures.js';

const message = (over: Record<string, unknown> = {}) => ({
  id: '10000000-0000-4000-8000-000000000001',
  ticket_id: '00000000-0000-4000-8000-000000000001',
  ticket_number: 1,
  role: 'customer',
  direction: 'inbound',
  text: 'Hello',
  channel: 'email',
  author_name: 'Jane',
  status: 'delivered',
  created_at: '2025-03-01T10:00:00Z',
  attachments: [],
  ...over,
});

describe('the drift reader (schemas/api/drift.ts)', () => {
  it('an item of exactly the known shape has no drift', () => {
    expect(driftOf(Message, [message(), message({ role: 'agent', direction: 'outbound' })])).toEqual([]);
  });

  it('reports a new field once per page, at its own path, with a non-null example when the page has one', () => {
    const drift = driftOf(Message, [
      message({ external_id: null, metadata: { deep: { deeper: 1 } } }),
      message({ external_id: 'abc-1' }),
    ]);
    expect(drift).toEqual([
      {
        fieldPath: 'external_id',
        kind: 'new_field',
        observed: '',
        expected: null,
        jsonType: 'string',
        example: '"abc-1"',
        label: null,
      },
      // Its content is not walked: one row for the new object, not one per key inside.
      expect.objectContaining({ fieldPath: 'metadata', kind: 'new_field', jsonType: 'object' }),
    ]);
  });

  it('a new field whose values change JSON type on the page: the later type is a type change', () => {
    const drift = driftOf(Message, [
      message({ external_id: null }),
      message({ external_id: 'abc' }),
      message({ external_id: 42 }),
    ]);
    expect(drift.map((o) => [o.kind, o.fieldPath, o.observed, o.expected, o.example])).toEqual([
      ['new_field', 'external_id', '', null, '"abc"'],
      ['type_change', 'external_id', 'number', 'string (as seen before)', '42'],
    ]);
  });

  it('a value of an open enum outside the known ones is a new enum value, one per value', () => {
    const drift = driftOf(Message, [
      message({ role: 'end_user' }),
      message({ role: 'end_user' }),
      message({ role: 'bot' }),
    ]);
    expect(drift.map((o) => [o.kind, o.fieldPath, o.observed, o.expected])).toEqual([
      ['new_enum_value', 'role', 'end_user', 'customer, agent, ai'],
      ['new_enum_value', 'role', 'bot', 'customer, agent, ai'],
    ]);
  });

  it('a JSON type the schema does not read a field as is a type change, in lists too', () => {
    const agent = {
      id: 'ag_1',
      name: 'Sam',
      email: null,
      kind: 'human',
      active: 'yes',
      team_ids: [{ id: 't1' }],
      created_at: '2025-01-01T00:00:00Z',
    };
    expect(driftOf(Agent, [agent]).map((o) => [o.kind, o.fieldPath, o.observed, o.expected])).toEqual([
      ['type_change', 'active', 'string', 'boolean or null'],
      ['type_change', 'team_ids[]', 'object', 'string'],
    ]);
  });

  it('custom fields: each field with its label, unknown entry keys, values not of their declared type', () => {
    const ticket = {
      id: '00000000-0000-4000-8000-000000000001',
      ticket_number: 1,
      subject: 's',
      status: 'open',
      priority: 'low',
      channel: 'email',
      created_at: '2025-01-01T00:00:00Z',
      updated_at: '2025-01-01T00:00:00Z',
      tags: [],
      contact: null,
      ticket_fields: [
        { field_id: 'fld_a', name: 'Refund', type: 'number', value: '12.00', position: 1 },
        { key: 'fld_b', label: 'Tier', value: null },
        { name: 'no id: not a field' },
      ],
    };
    expect(driftOf(Ticket, [ticket]).map((o) => [o.kind, o.fieldPath, o.observed, o.label])).toEqual([
      ['new_custom_field', 'ticket_fields.fld_a', '', 'Refund'],
      ['new_field', 'ticket_fields[].position', '', null],
      ['type_change', 'ticket_fields.fld_a', 'string', null],
      ['new_custom_field', 'ticket_fields.fld_b', '', 'Tier'],
    ]);
  });

  it('a page reports at most MAX_DRIFT_PER_PAGE differences (a source whose keys are ids cannot flood the table)', () => {
    const items = Array.from({ length: 80 }, (_, i) => message({ [`k${i}`]: i }));
    expect(driftOf(Message, items)).toHaveLength(MAX_DRIFT_PER_PAGE);
  });

  it('examples are short and masked; the client scrubs the key from every text', () => {
    expect(exampleOf('jane.doe@example.com')).toBe('"<e-mail>"');
    expect(exampleOf({ phone: '+49 170 1234567', note: 'x'.repeat(100) })).toBe(
      `{"phone":"<phone>","note":"${'x'.repeat(39)}…"}`,
    );
    expect(exampleOf({ a: { b: { c: 1 } } })).toBe('{"a":{"b":{"…":"…"}}}');
    expect(exampleOf(['2026-12-01', '2026-12-01T10:00:00Z', 'ORD-16905'])).toBe(
      '["2026-12-01","2026-12-01T10:00:00Z","ORD-16905"]',
    );
    expect(exampleOf(Array.from({ length: 300 }, (_, i) => i)).length).toBeLessThanOrEqual(120);
    const key = new Secret('sk_live_secret');
    const scrubbed = scrubDrift(
      {
        fieldPath: 'token_sk_live_secret',
        kind: 'new_field',
        observed: '',
        expected: null,
        jsonType: 'string',
        example: '"sk_live_secret"',
        label: 'sk_live_secret',
      },
      key,
    );
    expect(JSON.stringify(scrubbed)).not.toContain('sk_live_secret');
  });
});

describe('ticket_custom_fields columns (schemas/custom-fields-view.ts)', () => {
  it('named by the field id and the type: plain ids as they are, any other id by a digest', () => {
    expect(fieldColumnName('fld_13a467c906', 'number')).toBe('fld_13a467c906_number');
    const evil = fieldColumnName(`x"; DROP TABLE tickets; --`, 'text');
    expect(evil).toMatch(/^cf_[0-9a-f]{12}_text$/);
    // Not the label, not the case: ids differing in case only are two fields, two names.
    expect(fieldColumnName('Fld_A', 'text')).not.toBe(fieldColumnName('fld_a', 'text'));
    expect(fieldColumnName('Fld_A', 'text')).toBe(fieldColumnName('Fld_A', 'text'));
    // An id that looks like a digest name is digested too, so it cannot take another field's column.
    expect(fieldColumnName('cf_000000000000', 'text')).not.toBe('cf_000000000000_text');
    expect(fieldColumnName('a'.repeat(41), 'json')).toMatch(/^cf_[0-9a-f]{12}_json$/);
    for (const id of ['ticket_id', '"', 'a b', '🙂', '\u0000', '2nd', 'a'.repeat(40)])
      expect(fieldColumnName(id, 'timestamp')).toMatch(/^[a-z][a-z0-9_]{0,62}$/);
  });

  it('one column per field and type of value, in the order the fields were first seen', () => {
    const at = (day: number) => `2025-01-0${day}T00:00:00.000000Z`;
    const columns = customFieldColumns([
      { key: 'z', label: 'Product', firstSeenAt: at(1), lastSeenAt: at(2), classes: { text: 3 } },
      { key: 'a', label: 'Product', firstSeenAt: at(2), lastSeenAt: at(2), classes: { number: 2 } },
      { key: 'c', label: null, firstSeenAt: null, lastSeenAt: null, classes: { text: 1, number: 1 } },
      { key: 'd', label: 'Unset', firstSeenAt: null, lastSeenAt: null, classes: {} },
      { key: 'e', label: 'Due', firstSeenAt: null, lastSeenAt: null, classes: { timestamp: 4 } },
      { key: 'f', label: 'Lookup', firstSeenAt: null, lastSeenAt: null, classes: { json: 4, boolean: 1 } },
    ]);
    expect(columns.map((c) => [c.key, c.column, c.type, c.tickets])).toEqual([
      ['z', 'z_text', 'string', 3],
      ['a', 'a_number', 'float', 2],
      ['c', 'c_number', 'float', 1],
      ['c', 'c_text', 'string', 1],
      ['e', 'e_timestamp', 'timestamp', 4],
      ['f', 'f_boolean', 'boolean', 1],
      ['f', 'f_json', 'json', 4],
    ]);
  });
});

describe("a worker's memory of the drift it recorded (activities/recorded-drift.ts)", () => {
  it('the later pages of a run carry only what the run has not recorded yet; another run records again', () => {
    const memory = recordedDrift({} as ActivityDeps);
    memory.remember([sighting('run-1')]);
    expect(memory.unrecorded([sighting('run-1'), sighting('run-1', 'custom')])).toEqual([
      sighting('run-1', 'custom'),
    ]);
    expect(memory.unrecorded([sighting('run-2')])).toEqual([sighting('run-2')]);
    // Only recent runs are kept.
    for (let i = 2; i <= 9; i++) memory.remember([sighting(`run-${i}`)]);
    expect(memory.unrecorded([sighting('run-1')])).toEqual([sighting('run-1')]);
    expect(memory.unrecorded([sighting('run-9')])).toEqual([]);
    // One memory per worker (per set of activity dependencies).
    expect(recordedDrift({} as ActivityDeps).unrecorded([sighting('run-9')])).toHaveLength(1);
  });
});
