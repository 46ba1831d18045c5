import { describe, expect, it } from 'vitest';
import {
  Agent,
  AgentSession,
  Message,
  MetricCatalogEntry,
  Tag,
  Team,
  Ticket,
  View,
} from '../../schemas/api/index.js';

/**
 * The reading rule of schemas/api/open.ts: strict where the spec is exact, open where it says "not shown",
 * "for example" or "possibly others". Each case is a reading of the spec our companion does not make.
 */
const ticket = {
  id: '0b8f4f0e-6f1e-4d54-9a39-1f0a3a1d2c11',
  ticket_number: 1042,
  subject: 'Order arrived damaged',
  status: 'open',
  priority: 'medium',
  channel: 'email',
  created_at: '2026-11-20T09:15:00Z',
  updated_at: '2026-11-21T10:00:00.123+01:00',
  tags: ['shipping'],
};

describe('2.2 ticket: contact, custom fields and further fields are open', () => {
  it('reads a ticket with none of the fields the spec does not show', () => {
    const t = Ticket.parse({ ...ticket });
    expect(t.contact).toBeNull();
    expect(t.assignee_id).toBeNull();
    expect(t.is_spam).toBeNull();
  });
  it('reads a numeric contact id as text and a nested name without failing', () => {
    const t = Ticket.parse({
      ...ticket,
      contact: { id: 48213, name: { first: 'Ana' }, emails: ['a@example.com'] },
    });
    expect(t.contact?.id).toBe('48213');
    expect(t.contact?.first_name).toBeNull();
    expect(t.contact?.email).toBeNull();
  });
  it('reads a bare contact id as { id }', () => {
    expect(Ticket.parse({ ...ticket, contact: 'ct_8f3a' }).contact?.id).toBe('ct_8f3a');
  });
  it('keeps custom-field values of any shape', () => {
    const fields = [
      { field_id: 7, value: { id: 1, label: 'Gold' } },
      { key: 'x', value: [{ a: 1 }] },
    ];
    expect(Ticket.parse({ ...ticket, ticket_fields: fields }).ticket_fields).toEqual(fields);
  });
  it('stays strict on what the spec defines: UUID id, status set, timestamps', () => {
    expect(Ticket.safeParse({ ...ticket, id: 'T-1' }).success).toBe(false);
    expect(Ticket.safeParse({ ...ticket, status: 'pending' }).success).toBe(false);
    expect(Ticket.safeParse({ ...ticket, updated_at: 'yesterday' }).success).toBe(false);
  });
  it('keeps unknown fields on the parsed item', () => {
    expect(Ticket.parse({ ...ticket, sla: { breached: true } })).toHaveProperty('sla');
  });
});

describe('2.3 message: role, direction, status, attachments are open', () => {
  const message = {
    id: '9d4c7d1e-0f55-4c2f-b1f4-6b7c1d2e3f40',
    ticket_id: ticket.id,
    ticket_number: 1042,
    role: 'end_user',
    direction: 'internal_forward',
    text: 'Hello',
    channel: 'email',
    author_name: 'Sam',
    status: 'read',
    created_at: '2026-11-20T09:20:00Z',
    attachments: [{ id: 'att_1', name: 'a.pdf', url: 'https://x' }],
  };
  it('reads roles and statuses beyond the listed ones and other attachment items', () => {
    const m = Message.parse(message);
    expect([m.role, m.direction, m.status]).toEqual(['end_user', 'internal_forward', 'read']);
    expect(m.attachments).toEqual(message.attachments);
  });
  it('rejects a message without a UUID id', () => {
    expect(Message.safeParse({ ...message, id: 12 }).success).toBe(false);
  });
});

describe('2.4, 2.6, 2.9: views, directory and catalog entries are open where not shown', () => {
  it('keeps view filters of another structure', () => {
    const filters = [{ any: [{ field: 'status', op: 'eq', value: 'open' }] }];
    expect(
      View.parse({ id: '3f0e2b8a-1c4d-4e6f-8a9b-0c1d2e3f4a5b', name: 'x', count: 1, filters, shared: 'yes' })
        .filters,
    ).toEqual(filters);
  });
  it('reads a tag without created_at, an agent with other kinds and team objects, a numeric team id', () => {
    expect(Tag.parse({ id: 5, name: 'vip' })).toMatchObject({ id: '5', created_at: null });
    expect(
      Agent.parse({ id: 'a1', name: 'Bot', kind: 'bot', active: 'yes', team_ids: [{ id: 3 }, 'tm_2'] }),
    ).toMatchObject({ kind: 'bot', active: null, team_ids: ['3', 'tm_2'], email: null });
    expect(Team.parse({ id: 9, name: 'Support' })).toMatchObject({ id: '9', agent_ids: null });
  });
  it('rejects a directory entry without an id (it could not be stored)', () => {
    expect(Agent.safeParse({ name: 'nobody' }).success).toBe(false);
  });
  it('reads other metric dataType values', () => {
    const entry = MetricCatalogEntry.parse({
      id: 'new_tickets',
      label: 'New tickets',
      description: 'd',
      group: 'volume',
      dataType: 'duration',
      format: 'count',
      aggregation: 'count',
      attribution: 'ticket_created',
      snapshot: false,
      higherIsBetter: true,
    });
    expect(entry.dataType).toBe('duration');
  });
});

describe('2.8 agent session: every field defined, agent id opaque', () => {
  it('reads a numeric agent id as text and rejects a broken timestamp', () => {
    const s = {
      id: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
      agent_id: 17,
      session_start: '2026-11-20T08:00:00Z',
      session_end: null,
      last_activity: '2026-11-20T09:00:00Z',
      updated_at: '2026-11-20T09:00:00Z',
    };
    expect(AgentSession.parse(s).agent_id).toBe('17');
    expect(AgentSession.safeParse({ ...s, session_start: 'n/a' }).success).toBe(false);
  });
});
