import { describe, expect, it } from 'vitest';
import {
  AgentSession,
  AgentSessionMeta,
  CreateTicketBody,
  CsatMeta,
  CsatSurvey,
  ErrorEnvelope,
  exportEnvelope,
  Message,
  MetricCatalogEntry,
  pageEnvelope,
  ReportQueryBody,
  ReportResult,
  SendMessageBody,
  Ticket,
  UpdateTicketBody,
  View,
} from '../../schemas/api/index.js';
import { ConfigFromEnv } from '../../schemas/config.js';
import { Secret } from '../../schemas/secret.js';

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
  contact: {
    id: '4c1b9d0a-3a6e-4c69-8f0e-2b8a3c4d5e6f',
    email: 'ana@example.com',
    first_name: 'Ana',
    last_name: null,
    phone: null,
  },
  ticket_type: 'regular',
  parent_ticket_id: null,
  assignee_id: 'agt_12',
  team_id: null,
  language: 'en',
  is_spam: false,
  resolved_at: null,
};

describe('2.1 envelope', () => {
  it('parses a ticket page with pagination', () => {
    const page = pageEnvelope(Ticket).parse({
      success: true,
      data: [ticket],
      pagination: { has_more: true, next_cursor: 'abc' },
    });
    expect(page.data[0]?.ticket_number).toBe(1042);
  });
  it('rejects has_more without a cursor', () => {
    const result = pageEnvelope(Ticket).safeParse({
      success: true,
      data: [],
      pagination: { has_more: true, next_cursor: null },
    });
    expect(result.success).toBe(false);
  });
  it('parses an error with retry_after and rejects one without request_id', () => {
    expect(
      ErrorEnvelope.parse({
        success: false,
        code: 'RATE_LIMIT_EXCEEDED',
        message: 'slow down',
        request_id: 'req_1',
        retry_after: 12,
      }).retry_after,
    ).toBe(12);
    expect(ErrorEnvelope.safeParse({ success: false, code: 'X', message: 'm' }).success).toBe(false);
  });
});

describe('2.2 ticket', () => {
  it('rejects a wrong status enum', () => {
    expect(Ticket.safeParse({ ...ticket, status: 'pending' }).success).toBe(false);
  });
  it('rejects a missing field', () => {
    const { updated_at: _omit, ...rest } = ticket;
    expect(Ticket.safeParse(rest).success).toBe(false);
  });
  it('rejects a timestamp without offset', () => {
    expect(Ticket.safeParse({ ...ticket, created_at: '2026-11-20T09:15:00' }).success).toBe(false);
  });
  it('accepts custom ticket fields', () => {
    const parsed = Ticket.parse({
      ...ticket,
      ticket_fields: [{ field_id: 'f1', name: 'Order id', type: 'text', value: 'A-1' }],
    });
    expect(parsed.ticket_fields).toEqual([{ field_id: 'f1', name: 'Order id', type: 'text', value: 'A-1' }]);
  });
});

describe('2.3 message', () => {
  const message = {
    id: '9d4c7d1e-0f55-4c2f-b1f4-6b7c1d2e3f40',
    ticket_id: ticket.id,
    ticket_number: 1042,
    role: 'agent',
    direction: 'outbound',
    text: 'Hello',
    channel: 'email',
    author_name: 'Sam',
    status: 'delivered',
    created_at: '2026-11-20T09:20:00Z',
    attachments: [],
  };
  it('accepts an unknown delivery status ("and possibly others")', () => {
    expect(Message.parse({ ...message, status: 'bounced' }).status).toBe('bounced');
  });
  it("keeps text over 10,000 characters whole (the limit is the server's promise, not a reason to lose a message)", () => {
    expect(Message.parse({ ...message, text: 'x'.repeat(10_001) }).text).toHaveLength(10_001);
  });
});

describe('2.4 view', () => {
  it('parses a view with filters', () => {
    expect(
      View.parse({
        id: '3f0e2b8a-1c4d-4e6f-8a9b-0c1d2e3f4a5b',
        name: 'Urgent',
        count: 3,
        filters: [{ condition: 'priority', operator: 'is', options: ['urgent'] }],
        shared: true,
      }).count,
    ).toBe(3);
  });
});

describe('2.7 CSAT survey export', () => {
  const survey = {
    id: '7a6b5c4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d',
    ticket_id: ticket.id,
    ticket_number: null,
    credited_agent_id: 'agt_12',
    credited_agent_name: null,
    attribution_source: 'survey_agent_id',
    score: 4,
    sent_at: '2026-11-20T09:15:00.123456Z',
    submitted_at: null,
  };
  it('parses an item with microseconds and a meta', () => {
    const envelope = exportEnvelope(CsatSurvey, CsatMeta).parse({
      success: true,
      data: [survey],
      pagination: { has_more: false, next_cursor: null },
      meta: {
        attribution: 'stored_survey_agent_id',
        comments_included: false,
        privacy: 'no contact details',
      },
    });
    expect(envelope.data[0]?.sent_at).toBe('2026-11-20T09:15:00.123456Z');
  });
  it('rejects a score outside 1–5 and an unknown attribution source', () => {
    expect(CsatSurvey.safeParse({ ...survey, score: 6 }).success).toBe(false);
    expect(CsatSurvey.safeParse({ ...survey, attribution_source: 'assignee' }).success).toBe(false);
  });
});

describe('2.8 agent session export', () => {
  it('parses an open session and the meta', () => {
    expect(
      AgentSession.parse({
        id: '1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d',
        agent_id: 'agt_3',
        session_start: '2026-11-20T08:00:00Z',
        session_end: null,
        last_activity: '2026-11-20T09:00:00Z',
        updated_at: '2026-11-20T09:00:00Z',
      }).session_end,
    ).toBeNull();
    expect(
      AgentSessionMeta.safeParse({
        date_filter: 'recorded_interval_overlap',
        order_by: 'session_start,id',
        stale_open_records_included: true,
        mutable: true,
        break_history_stored: true,
        description: 'x',
      }).success,
    ).toBe(true); // meta is informational: read loosely, never a failed page
  });
});

describe('2.9–2.10 reports', () => {
  it('parses a catalog entry and rejects an unknown format', () => {
    const entry = {
      id: 'new_tickets',
      label: 'New tickets',
      description: 'Tickets created in the period',
      group: 'volume',
      dataType: 'integer',
      format: 'count',
      aggregation: 'count',
      attribution: 'ticket_created',
      snapshot: false,
      higherIsBetter: false,
    };
    expect(MetricCatalogEntry.parse(entry).id).toBe('new_tickets');
    expect(MetricCatalogEntry.safeParse({ ...entry, format: 'bytes' }).success).toBe(false);
  });
  it('parses the four result kinds by kind', () => {
    const kinds = [
      { kind: 'kpi', value: 12, previousValue: null, format: 'count' },
      {
        kind: 'time-series',
        format: 'count',
        series: [{ key: 'new_tickets', label: 'New tickets' }],
        points: [
          { date: '2026-11-20', label: 'Nov 20', values: { new_tickets: 4, new_tickets__compare: 2 } },
        ],
      },
      { kind: 'category', format: 'count', items: [{ key: 'email', label: 'Email', value: 3 }] },
      {
        kind: 'data_table',
        rowDimension: 'channel',
        columns: [{ measureId: 'new_tickets', label: 'New tickets', format: 'count' }],
        rows: [{ key: 'email', label: 'Email', values: { new_tickets: 3 } }],
      },
    ];
    expect(kinds.map((k) => ReportResult.parse(k).kind)).toEqual([
      'kpi',
      'time-series',
      'category',
      'data_table',
    ]);
    expect(ReportResult.safeParse({ kind: 'pie', format: 'count' }).success).toBe(false);
  });
  it('4.12 accepts exactly {query, timezone}', () => {
    expect(ReportQueryBody.safeParse({ query: 'FROM tickets', timezone: 'Europe/Paris' }).success).toBe(true);
    expect(ReportQueryBody.safeParse({ query: 'FROM tickets', timezone: 'UTC', extra: 1 }).success).toBe(
      false,
    );
  });
});

describe('4.4–4.6 request bodies are strict', () => {
  it('rejects an unknown field in POST /tickets and requires channel', () => {
    expect(CreateTicketBody.safeParse({ channel: 'email', colour: 'red' }).success).toBe(false);
    expect(CreateTicketBody.safeParse({ subject: 'x' }).success).toBe(false);
    expect(CreateTicketBody.safeParse({ channel: 'email', subject: 'x'.repeat(500) }).success).toBe(true);
    expect(CreateTicketBody.safeParse({ channel: 'email', subject: 'x'.repeat(501) }).success).toBe(false);
  });
  it('requires body or html_body on a message send', () => {
    expect(SendMessageBody.safeParse({ type: 'note' }).success).toBe(false);
    expect(SendMessageBody.safeParse({ type: 'note', body: 'hi' }).success).toBe(true);
  });
  it('requires at least one change on a ticket update', () => {
    expect(UpdateTicketBody.safeParse({}).success).toBe(false);
    expect(UpdateTicketBody.safeParse({ status: 'resolved' }).success).toBe(true);
  });
});

describe('configuration', () => {
  const env = {
    SUPPORT_API_URL: 'https://support.example.com',
    SUPPORT_API_KEY: 'sk_live_secret',
    DESTINATION_URL: 'postgres://u:p@localhost:5432/db',
  };
  it('applies defaults and wraps the key in a Secret', () => {
    const config = ConfigFromEnv.parse(env);
    expect(config.POSTGRES_SCHEMA).toBe('support');
    expect(config.SYNC_LOOKBACK).toBe(72 * 3600 * 1000);
    expect(JSON.stringify(config)).not.toContain('sk_live_secret');
    expect(config.SUPPORT_API_KEY).toBeInstanceOf(Secret);
  });
  it('rejects a window over 90 days and a bad destination, one issue each', () => {
    const result = ConfigFromEnv.safeParse({ ...env, SYNC_WINDOW: 'P91D', DESTINATION_URL: 'mysql://x' });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((i) => i.path.join('.')).sort()).toEqual([
      'DESTINATION_URL',
      'SYNC_WINDOW',
    ]);
  });
});

describe('Secret', () => {
  it('never prints its value', () => {
    const secret = new Secret('k-123');
    expect(`${secret}`).toBe('[redacted]');
    expect(JSON.stringify({ secret })).toBe('{"secret":"[redacted]"}');
    expect(secret.scrub('header k-123 sent')).toBe('header [redacted] sent');
    expect(secret.reveal()).toBe('k-123');
  });
});
