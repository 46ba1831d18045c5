import { randomUUID } from 'node:crypto';
import type { Destination, WriteBatch, WriteResult } from '../../connectors/destination.js';
import type { Agent, CsatSurvey, Message, Ticket, View } from '../../schemas/api/index.js';
import {
  type ApiRowInput,
  rowContentHash,
  type SchemaChangeSighting,
  type TableName,
  type TableSpec,
} from '../../schemas/warehouse.js';

/** A valid ticket with ticket-sized content; override any field. */
export function ticket(overrides: Partial<Ticket> = {}): Ticket {
  const id = overrides.id ?? randomUUID();
  return {
    id,
    ticket_number: 1000,
    subject: 'Order #4411 arrived damaged, please advise on replacement',
    status: 'open',
    priority: 'medium',
    channel: 'email',
    created_at: '2025-03-01T10:00:00Z',
    updated_at: '2025-03-01T10:00:00Z',
    tags: ['shipping', 'damaged'],
    contact: {
      id: '7b0e4b5e-4d0e-4c39-9d53-3f0f1b7a2a10',
      email: 'jane.doe@example.com',
      first_name: 'Jane',
      last_name: 'Doe',
      phone: '+33 6 12 34 56 78',
    },
    ticket_type: 'regular',
    parent_ticket_id: null,
    assignee_id: 'agent_12',
    team_id: 'team_3',
    language: 'en',
    is_spam: false,
    resolved_at: null,
    ticket_fields: [
      { field_id: 'f_order', name: 'Order id', type: 'text', value: '4411' },
      { field_id: 'f_items', name: 'Items', type: 'multi_select', value: ['mug', 'plate'] },
    ],
    ...overrides,
  };
}

/** The API input for a ticket: the parsed item and, as raw, its JSON round-trip. */
export const input = <T>(item: T): ApiRowInput<T> => ({ item, raw: JSON.parse(JSON.stringify(item)) });

export function message(overrides: Partial<Message> = {}): Message {
  return {
    id: randomUUID(),
    ticket_id: randomUUID(),
    ticket_number: 1000,
    role: 'customer',
    direction: 'inbound',
    text: 'Hello, my order arrived damaged.',
    channel: 'email',
    author_name: 'Jane Doe',
    status: 'delivered',
    created_at: '2025-03-01T10:00:00Z',
    attachments: [],
    ...overrides,
  };
}

export function survey(overrides: Partial<CsatSurvey> = {}): CsatSurvey {
  return {
    id: randomUUID(),
    ticket_id: randomUUID(),
    ticket_number: 1000,
    credited_agent_id: 'agent_12',
    credited_agent_name: 'Sam',
    attribution_source: 'survey_agent_id',
    score: null,
    sent_at: '2025-03-02T09:00:00.123456Z',
    submitted_at: null,
    comment: null,
    ...overrides,
  };
}

/** ISO instant `minutes` after 2025-03-01T10:00Z (helps build ordered versions). */
export const at = (minutes: number) => new Date(Date.UTC(2025, 2, 1, 10, minutes)).toISOString();

/**
 * A table spec as an older version of the model had it: without `dropped` columns (its rows then hash
 * without them too), and — `hashless` — writing no `_content_hash` at all, as the sync did before hashes.
 * Destinations take it through their `tables` option, to write rows the way an older sync did.
 */
export function olderSpec<I>(
  spec: TableSpec<I>,
  dropped: readonly string[],
  options: { hashless?: boolean } = {},
): TableSpec<I> {
  const keep = (name: string) => !dropped.includes(name);
  const mask = Object.fromEntries(dropped.map((c) => [c, true as const]));
  return {
    ...spec,
    columns: spec.columns.filter((c) => keep(c.name)),
    rowSchema: spec.rowSchema.omit(mask as never),
    indexes: spec.indexes.filter((i) => i.every(keep)),
    clusterBy: spec.clusterBy.filter(keep),
    toRow(input: I) {
      const row = spec.toRow(input);
      for (const c of dropped) delete row[c];
      row['_content_hash'] = options.hashless ? null : rowContentHash(row);
      return row;
    },
  };
}

export function agent(overrides: Partial<Agent> = {}): Agent {
  return {
    id: `agent_${randomUUID().slice(0, 8)}`,
    name: 'Sam Rivers',
    email: 'sam.rivers@example.com',
    kind: 'human',
    active: true,
    team_ids: ['team_3', 'team_7'],
    created_at: '2024-05-01T08:30:00.250Z',
    ...overrides,
  };
}

export function view(overrides: Partial<View> = {}): View {
  return {
    id: randomUUID(),
    name: 'Urgent e-mail',
    count: 7,
    filters: [{ condition: 'priority', operator: 'is', options: ['urgent'] }],
    shared: true,
    ...overrides,
  };
}

/** A schema-drift sighting: a new string field of tickets, seen by `runId`. */
export const sighting = (runId: string | null, fieldPath = 'sla_breached_at'): SchemaChangeSighting => ({
  table: 'tickets',
  fieldPath,
  kind: 'new_field',
  observed: '',
  expected: null,
  jsonType: 'string',
  example: '""',
  label: null,
  stream: 'tickets',
  runId,
});

/** One batch written and merged at once, on its own: the result of its write. */
export async function writeBatch<T extends TableName>(
  destination: Pick<Destination, 'writeTables'>,
  batch: WriteBatch<T>,
): Promise<WriteResult> {
  const [result] = await destination.writeTables([batch]);
  return result!;
}
