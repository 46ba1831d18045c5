import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompanionHandle } from '../../companion/index.js';
import type { SupportApiClient } from '../../connectors/support-api/client.js';
import type { Page } from '../../connectors/support-api/index.js';
import { fetchMetricCatalog } from '../../connectors/support-api/paginate.js';
import type { DriftObservation } from '../../schemas/api/drift.js';
import {
  iterateAgentSessions,
  iterateAgents,
  iterateCsatSurveys,
  iterateMessages,
  iterateTags,
  iterateTeams,
  iterateTickets,
  iterateViews,
} from '../support/iterate.js';
import { clientFor, companion } from './support/companion.js';

/**
 * The drift the reader reports (schemas/api/drift.ts) against the companion: none in the default world but
 * the workspace's custom fields; in a variant world (companion/variant.ts: the spec's open points read
 * another way) every kind, where the variant puts it.
 */

const DAY = 24 * 60 * 60 * 1000;
/** The companions' clock. */
const NOW = new Date('2026-06-01T00:00:00Z');

async function driftOfEveryStream(client: SupportApiClient): Promise<Map<string, DriftObservation[]>> {
  const out = new Map<string, DriftObservation[]>();
  const collect = async (stream: string, pages: AsyncIterable<Page<unknown, unknown>>) => {
    const found = out.get(stream) ?? [];
    for await (const p of pages) found.push(...p.drift);
    out.set(stream, found);
  };
  await collect('tickets', iterateTickets(client, { limit: 50, includeTicketFields: true }));
  const tickets = [];
  for await (const p of iterateTickets(client, { limit: 20 })) tickets.push(...p.items);
  for (const t of tickets.slice(0, 20))
    await collect('ticket_messages', iterateMessages(client, { ticketNumber: t.ticket_number, limit: 100 }));
  await collect('views', iterateViews(client, {}));
  await collect('tags', iterateTags(client, {}));
  await collect('teams', iterateTeams(client, {}));
  await collect('agents', iterateAgents(client, {}));
  out.set('metric_catalog', (await fetchMetricCatalog(client)).drift);
  const from = new Date(NOW.getTime() - 80 * DAY).toISOString();
  const before = NOW.toISOString();
  await collect(
    'csat_surveys',
    iterateCsatSurveys(client, { from, before, by: 'sent', includeComments: true }),
  );
  await collect('agent_sessions', iterateAgentSessions(client, { from, before }));
  return out;
}

const kinds = (drift: Map<string, DriftObservation[]>, stream: string) =>
  new Set(
    (drift.get(stream) ?? []).map((o) => `${o.kind} ${o.fieldPath}${o.observed ? ` = ${o.observed}` : ''}`),
  );

describe('the reader reports what the source serves beyond its schema', () => {
  let plain: CompanionHandle;
  let variant: CompanionHandle;
  const clients: SupportApiClient[] = [];
  beforeAll(async () => {
    const now = () => NOW;
    plain = await companion({ seed: 11, tickets: 80, rateLimits: false, now });
    variant = await companion({ seed: 11, tickets: 80, rateLimits: false, now, variant: 1 });
  });
  afterAll(async () => {
    for (const c of clients) await c.close();
    await plain?.stop();
    await variant?.stop();
  });

  it('the default world: nothing but the workspace custom fields, each with its label', async () => {
    const client = clientFor(plain).client;
    clients.push(client);
    const drift = await driftOfEveryStream(client);
    for (const [stream, found] of drift)
      expect(
        found.filter((o) => o.kind !== 'new_custom_field'),
        stream,
      ).toEqual([]);
    const fields = plain.world.ticketFields.filter((f) => f.orgId === plain.world.orgA.id);
    const custom = drift.get('tickets')!;
    expect(new Map(custom.map((o) => [o.fieldPath, o.label]))).toEqual(
      new Map(fields.map((f) => [`ticket_fields.${f.id}`, f.name])),
    );
  });

  it('a variant world: new fields, new enum values, type changes and new custom fields, where it puts them', async () => {
    const client = clientFor(variant).client;
    clients.push(client);
    const drift = await driftOfEveryStream(client);
    const tickets = kinds(drift, 'tickets');
    for (const expected of [
      'new_field sla_breached_at',
      'new_field custom',
      'new_field source',
      'new_field contact.name',
      'new_field ticket_fields[].position',
    ])
      expect(tickets).toContain(expected);
    expect(
      [...tickets].some((k) =>
        /^new_custom_field ticket_fields\.fld_(order_total|linked_order|related_products)$/.test(k),
      ),
    ).toBe(true);
    expect(
      [...tickets].some((k) => /^type_change ticket_fields\.fld_\w+ = (string|object|array)$/.test(k)),
    ).toBe(true);
    expect(
      [...kinds(drift, 'ticket_messages')].some((k) =>
        /^new_enum_value role = (end_user|requester|system_user|staff|bot|ai_agent)$/.test(k),
      ),
    ).toBe(true);
    expect(
      [...kinds(drift, 'agents')].some(
        (k) =>
          k.startsWith('new_field ') || k.startsWith('type_change ') || k.startsWith('new_enum_value kind'),
      ),
    ).toBe(true);
    const catalog = kinds(drift, 'metric_catalog');
    expect(catalog).toContain('new_field unit');
    expect([...catalog].some((k) => /^new_enum_value (dataType|group) = /.test(k))).toBe(true);
    expect([...kinds(drift, 'csat_surveys')].some((k) => /^new_field (locale|tags|scale)$/.test(k))).toBe(
      true,
    );
    expect(
      [...kinds(drift, 'agent_sessions')].some((k) => /^new_field (timezone|session_type)$/.test(k)),
    ).toBe(true);
  });
});
