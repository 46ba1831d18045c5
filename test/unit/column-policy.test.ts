import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DestinationSettings, WITHHELD_EXAMPLE } from '../../connectors/settings.js';
import { Secret } from '../../schemas/secret.js';
import { ColumnPolicyText, Redactor, restated, rowContentHash, TABLES } from '../../schemas/warehouse.js';
import { type ConfigError, loadConfig } from '../../worker/config.js';
import { input, message, ticket } from '../destinations/fixtures.js';

const KEY = 'k'.repeat(16) + '0123456789abcdef';
const hmac = (value: string) => createHmac('sha256', KEY).update(value, 'utf8').digest('hex');
const policy = (text: string) => ColumnPolicyText.parse(text);
const problems = (text: string) => {
  const r = ColumnPolicyText.safeParse(text);
  return r.success ? [] : r.error.issues.map((i) => i.message);
};

const BASE_ENV = {
  SUPPORT_API_URL: 'http://localhost:1',
  SUPPORT_API_KEY: 'cx_test',
  DESTINATION_URL: 'postgres://u:p@localhost/db',
};
const configProblems = (env: Record<string, string>) => {
  try {
    loadConfig({ ...BASE_ENV, ...env });
    return [];
  } catch (err) {
    return (err as ConfigError).problems;
  }
};

describe('SYNC_COLUMN_POLICY: written as entries, checked against the table specs', () => {
  it('reads columns and _raw fields, separated by commas or white space, into item paths', () => {
    expect(
      policy('tickets.contact_email=hash,\n ticket_messages.text=DROP  tickets._raw.contact.name=drop'),
    ).toEqual([
      { table: 'tickets', path: ['contact', 'email'], action: 'hash', entry: 'tickets.contact_email=hash' },
      { table: 'ticket_messages', path: ['text'], action: 'drop', entry: 'ticket_messages.text=DROP' },
      {
        table: 'tickets',
        path: ['contact', 'name'],
        action: 'drop',
        entry: 'tickets._raw.contact.name=drop',
      },
    ]);
    expect(policy('')).toEqual([]);
  });

  it('names the bad entry and lists what is valid', () => {
    expect(problems('ticket.contact_email=hash')).toEqual([
      expect.stringMatching(
        /^"ticket\.contact_email=hash": no table ticket .*tables: tickets, ticket_messages, /,
      ),
    ]);
    const [column] = problems('tickets.contact_mail=hash');
    expect(column).toMatch(/^"tickets\.contact_mail=hash": tickets has no column contact_mail/);
    expect(column).toContain('columns: subject, contact_id, contact_email, contact_first_name');
    expect(column).toContain('_raw.<field>');
    expect(problems('tickets.subject=mask')).toEqual([
      '"tickets.subject=mask": unknown action mask; actions: hash, drop',
    ]);
    expect(problems('tickets subject')).toHaveLength(2);
    expect(problems('report_snapshots.query=hash')[0]).toMatch(/no table report_snapshots/);
  });

  it('refuses the columns the sync relies on, hashes of non-text columns, and contradictions', () => {
    expect(problems('tickets.status=drop')[0]).toMatch(/tickets\.status cannot be hashed or dropped/);
    expect(problems('ticket_messages.ticket_id=hash')[0]).toMatch(/ticket_id cannot be hashed or dropped/);
    expect(problems('tickets._raw.id=drop')[0]).toMatch(/tickets\.id cannot be hashed or dropped/);
    expect(problems('csat_surveys._version=drop')[0]).toMatch(/has no column _version/);
    expect(problems('tickets.ticket_fields=hash')[0]).toMatch(
      /ticket_fields is a json column: only text columns can be hashed \(drop it instead\)/,
    );
    expect(problems('tickets.subject=hash tickets._raw.subject=drop')).toEqual([
      '"tickets._raw.subject=drop": contradicts the earlier entry "tickets.subject=hash"',
    ]);
    // A rule inside a JSON column edits the JSON; a repeated entry is harmless.
    expect(
      problems('tickets._raw.ticket_fields.value=drop tickets.subject=hash tickets.subject=hash'),
    ).toEqual([]);
  });

  it('a policy that hashes needs SYNC_HASH_KEY, of at least 32 characters, never echoed', () => {
    expect(configProblems({ SYNC_COLUMN_POLICY: 'tickets.contact_email=hash,tickets.subject=drop' })).toEqual(
      ['SYNC_HASH_KEY: is required: SYNC_COLUMN_POLICY hashes tickets.contact_email'],
    );
    const short = 'short-secret-value';
    const shortProblems = configProblems({
      SYNC_COLUMN_POLICY: 'tickets.subject=hash',
      SYNC_HASH_KEY: short,
    });
    expect(shortProblems).toEqual([expect.stringMatching(/^SYNC_HASH_KEY: must be at least 32 characters/)]);
    expect(shortProblems.join()).not.toContain(short);
    expect(configProblems({ SYNC_COLUMN_POLICY: 'tickets.subject=drop' })).toEqual([]);
    expect(configProblems({ SYNC_COLUMN_POLICY: 'tickets.nope=drop' })).toEqual([
      expect.stringMatching(/^SYNC_COLUMN_POLICY: "tickets\.nope=drop": tickets has no column nope/),
    ]);
    // One entry per line in a --config YAML block.
    const file = join(mkdtempSync(join(tmpdir(), 'policy-')), 'settings.yaml');
    writeFileSync(file, 'SYNC_COLUMN_POLICY: |\n  tickets.contact_email=hash\n  ticket_messages.text=drop\n');
    const fromFile = loadConfig({ ...BASE_ENV, SYNC_HASH_KEY: KEY }, file).SYNC_COLUMN_POLICY;
    expect(fromFile?.map((r) => r.entry)).toEqual([
      'tickets.contact_email=hash',
      'ticket_messages.text=drop',
    ]);
    const config = loadConfig({
      ...BASE_ENV,
      SYNC_COLUMN_POLICY: 'tickets.subject=hash',
      SYNC_HASH_KEY: KEY,
    });
    expect(JSON.stringify(config)).not.toContain(KEY);
  });
});

describe('the policy applied to a row: typed columns and _raw alike, before the content hash', () => {
  const redactor = new Redactor(
    policy('tickets.contact_email=hash tickets.contact_phone=drop tickets._raw.ticket_fields.value=drop'),
    new Secret(KEY),
  );
  const spec = redactor.spec(TABLES.tickets);

  it('hashes with HMAC-SHA-256 (hex) in the column and in _raw, and drops from both', () => {
    const t = ticket();
    const row = spec.toRow(input(t));
    const email = hmac('jane.doe@example.com');
    expect(row['contact_email']).toBe(email);
    expect(row['contact_phone']).toBeNull();
    const raw = row['_raw'] as { contact: Record<string, unknown>; ticket_fields: Record<string, unknown>[] };
    expect(raw.contact['email']).toBe(email);
    expect(raw.contact).not.toHaveProperty('phone');
    expect(raw.contact['first_name']).toBe('Jane');
    expect(raw.ticket_fields.map((f) => Object.keys(f).sort())).toEqual([
      ['field_id', 'name', 'type'],
      ['field_id', 'name', 'type'],
    ]);
    expect(row['ticket_fields']).toEqual(raw.ticket_fields);
    const text = JSON.stringify(row);
    for (const plain of ['jane.doe@example.com', '+33 6 12 34 56 78', 'plate', 'mug'])
      expect(text).not.toContain(plain);
    // The input is not changed: the activity still compares the plain item's version.
    expect(t.contact?.email).toBe('jane.doe@example.com');
  });

  it('stores the hash of what is stored, equal for equal items, so a re-read sees no change', () => {
    const t = ticket();
    const row = spec.toRow(input(t));
    expect(row['_content_hash']).toBe(rowContentHash(row));
    expect(spec.toRow(input(structuredClone(t)))['_content_hash']).toBe(row['_content_hash']);
    expect(row['_content_hash']).not.toBe(TABLES.tickets.toRow(input(t))['_content_hash']);
    // A change only in a dropped field is no change at all.
    const newPhone = ticket({ ...t, contact: { ...t.contact!, phone: '+1 555 0100' } });
    expect(spec.toRow(input(newPhone))['_content_hash']).toBe(row['_content_hash']);
    expect(
      spec.toRow(input(ticket({ ...t, contact: { ...t.contact!, email: 'x@y.z' } })))['_content_hash'],
    ).not.toBe(row['_content_hash']);
  });

  it('a row derived again from a stored _raw keeps a value already hashed; read from the source it is hashed', () => {
    const t = ticket();
    const stored = spec.toRow(input(t));
    const storedRaw = stored['_raw'] as Record<string, unknown>;
    // Derived again from what is stored (the rule applied before): the same row, no hash of a hash.
    const again = spec.toRow(restated(input(ticket(storedRaw as never))));
    expect(again['contact_email']).toBe(hmac('jane.doe@example.com'));
    expect(again['_content_hash']).toBe(stored['_content_hash']);
    // Stored before the rule: the plain value is hashed.
    const plainRaw = TABLES.tickets.toRow(input(t))['_raw'];
    expect(spec.toRow(restated(input(ticket(plainRaw as never))))['_content_hash']).toBe(
      stored['_content_hash'],
    );
    // A source value of a hash's form is a value like any other: hashed.
    const hexEmail = 'a'.repeat(64);
    const fromSource = spec.toRow(input(ticket({ ...t, contact: { ...t.contact!, email: hexEmail } })));
    expect(fromSource['contact_email']).toBe(hmac(hexEmail));
  });

  it('reaches a value where the source sends it another way (a number, a bare contact id)', () => {
    const r = new Redactor(policy('tickets.contact_id=hash tickets.contact_phone=hash'), new Secret(KEY));
    const t = ticket();
    const raw = { ...JSON.parse(JSON.stringify(t)), contact: { ...t.contact, phone: 33612345678 } };
    const row = r
      .spec(TABLES.tickets)
      .toRow({ item: { ...t, contact: { ...t.contact!, phone: '33612345678' } }, raw });
    expect(row['contact_phone']).toBe(hmac('33612345678'));
    expect((row['_raw'] as { contact: { phone: string } }).contact.phone).toBe(hmac('33612345678'));
    const bare = r
      .spec(TABLES.tickets)
      .toRow({ item: { ...t, contact: { id: '42' } as never }, raw: { ...raw, contact: 42 } });
    expect(bare['contact_id']).toBe(hmac('42'));
    expect((bare['_raw'] as { contact: unknown }).contact).toBe(hmac('42'));
  });

  it('leaves tables without rules, and null values, as they are', () => {
    const m = message();
    expect(redactor.spec(TABLES.ticket_messages)).toBe(TABLES.ticket_messages);
    const row = spec.toRow(input(ticket({ contact: null })));
    expect(row['contact_email']).toBeNull();
    expect((row['_raw'] as { contact: unknown }).contact).toBeNull();
    expect(redactor.raw('ticket_messages', m)).toBe(m);
  });

  it('a destination writes rows and items set aside through it (a rejected item keyed by what is stored)', () => {
    const settings = new DestinationSettings({ redactor });
    const row = settings.spec('tickets').toRow(input(ticket()));
    expect(row['contact_email']).toBe(hmac('jane.doe@example.com'));
    const raw = { contact: { email: 'jane.doe@example.com', phone: '+33 6' }, status: 'bogus' };
    const [withId, withoutId] = settings.rejectedItems([
      {
        table: 'tickets',
        itemKey: 'id-1',
        itemId: 'id-1',
        stream: 'tickets',
        scope: 'sweep',
        pageCursor: null,
        reason: 'status',
        raw,
      },
      {
        table: 'tickets',
        itemKey: 'sha256:plain',
        itemId: null,
        stream: 'tickets',
        scope: 'sweep',
        pageCursor: null,
        reason: 'id',
        raw,
      },
    ]);
    for (const item of [withId!, withoutId!])
      expect(item.raw).toEqual({ contact: { email: hmac('jane.doe@example.com') }, status: 'bogus' });
    expect(withId!.itemKey).toBe('id-1');
    expect(withoutId!.itemKey).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(withoutId!.itemKey).not.toBe('sha256:plain');
  });

  it('withholds the examples of schema changes in a table the policy covers', () => {
    const settings = new DestinationSettings({ redactor });
    const sighting = (table: 'tickets' | 'tags') => ({
      table,
      fieldPath: `${table}.contact.nickname`,
      kind: 'new_field' as const,
      observed: 'string',
      expected: null,
      jsonType: 'string' as const,
      example: '"Janie D."',
      label: null,
      stream: table,
      runId: 'run-1',
    });
    const batch = (table: 'tickets' | 'tags') => ({
      table,
      rows: [],
      checkpoint: null,
      schemaChanges: [sighting(table)],
    });
    const [covered] = settings.schemaChanges([batch('tickets') as never]);
    const [uncovered] = settings.schemaChanges([batch('tags') as never]);
    expect(covered).toMatchObject({ fieldPath: 'tickets.contact.nickname', example: WITHHELD_EXAMPLE });
    expect(JSON.stringify(covered)).not.toContain('Janie');
    expect(uncovered!.example).toBe('"Janie D."');
  });
});
