import { createHash } from 'node:crypto';
import { z } from 'zod';
import { Timestamp } from '../api/index.js';
import { Ticket } from '../api/tickets.js';
import { deriveColumns } from './derive.js';
import { tableSpec, type WarehouseRow } from './table-spec.js';
import { canonicalJson, storableJson, toColumnValue } from './values.js';

/**
 * What the ticket sweep saw of a ticket's tracked state (status, priority, assignee, team, tags) each time it
 * rewrote the ticket: one row per distinct (ticket, version, state). The API has no events feed and a reopen
 * clears `resolved_at`, so these sightings are the only status history there is; the view `ticket_history`
 * turns them into intervals. Written in the same transaction (PostgreSQL) or staged append and flush
 * (BigQuery) as the tickets they describe, so the history never says what `tickets` does not.
 */

/** The attributes whose changes make a new interval of `ticket_history`. */
export const TRACKED_TICKET_ATTRIBUTES = ['status', 'priority', 'assignee_id', 'team_id', 'tags'] as const;

/** A sighting: the ticket as a list page served it, when and how the sweep saw it. */
export const TicketObservationInput = z.object({
  ticket: Ticket,
  /** When the page was written (the worker's clock): orders sightings that share a version. */
  observed_at: Timestamp,
  /** The warehouse did not hold the ticket before (first sync, a new ticket, or a rebuilt table). */
  first_seen: z.boolean(),
  /** Written by a full refresh. */
  repair: z.boolean(),
});
export type TicketObservationInput = z.infer<typeof TicketObservationInput>;

const ObservationRow = z.object({
  ticket_id: z.string(),
  ticket_number: z.number().int(),
  updated_at: Timestamp,
  state_hash: z.string(),
  observed_at: Timestamp,
  status: z.string(),
  priority: z.string(),
  assignee_id: z.string().nullable(),
  team_id: z.string().nullable(),
  tags: z.array(z.string()),
  created_at: Timestamp,
  resolved_at: Timestamp.nullable(),
  first_seen: z.boolean(),
  repair: z.boolean(),
});
type ObservationRow = z.infer<typeof ObservationRow>;

const observationColumns = deriveColumns('ticket_observations', ObservationRow, {
  descriptions: {
    ticket_id: 'Ticket id (joins tickets.id). Primary key with updated_at and state_hash.',
    ticket_number: 'Ticket number.',
    updated_at: "The ticket's updated_at (its version) when the sweep saw this state.",
    state_hash:
      'SHA-256 (hex) of the tracked state: status, priority, assignee_id, team_id and the sorted tags. Two sightings of one state share it.',
    observed_at:
      "When the sync wrote this sighting (the worker's clock). Orders sightings of one version; the bound of a change the source did not stamp.",
    status: 'Status seen.',
    priority: 'Priority seen.',
    assignee_id: 'Assignee seen (joins agents.id); null when unassigned.',
    team_id: 'Team seen (joins teams.id).',
    tags: 'Tags seen (JSON array of strings, sorted).',
    created_at: 'When the ticket was created.',
    resolved_at: 'resolved_at as served with this state (the API clears it on reopen).',
    first_seen:
      'True when the warehouse did not hold the ticket before this sighting (first sync, a new ticket, or a rebuilt table): the history starts here.',
    repair: 'True when a full refresh wrote the sighting.',
  },
});

const sortedTags = (tags: readonly string[]) => [...tags].sort();

/** The hash of a ticket's tracked state (see TRACKED_TICKET_ATTRIBUTES). */
export function ticketStateHash(t: Pick<Ticket, (typeof TRACKED_TICKET_ATTRIBUTES)[number]>): string {
  const state = [t.status, t.priority, t.assignee_id ?? null, t.team_id ?? null, sortedTags(t.tags)];
  return createHash('sha256').update(canonicalJson(state)).digest('hex');
}

function observationOf(input: TicketObservationInput): ObservationRow {
  const t = input.ticket;
  return {
    ticket_id: t.id,
    ticket_number: t.ticket_number,
    updated_at: t.updated_at,
    state_hash: ticketStateHash(t),
    observed_at: input.observed_at,
    status: t.status,
    priority: t.priority,
    assignee_id: t.assignee_id ?? null,
    team_id: t.team_id ?? null,
    tags: sortedTags(t.tags),
    created_at: t.created_at,
    resolved_at: t.resolved_at ?? null,
    first_seen: input.first_seen,
    repair: input.repair,
  };
}

export const ticketObservationsTable = tableSpec<TicketObservationInput>(
  {
    name: 'ticket_observations',
    description:
      "What the ticket sweep saw of each ticket's status, priority, assignee, team and tags: one row per distinct (ticket, updated_at, state) among the tickets it rewrote, written with them in one transaction. The source of the view `ticket_history`. A sighting of one state and version seen again keeps one row (the latest write wins when the content differs).",
    primaryKey: ['ticket_id', 'updated_at', 'state_hash'],
    merge: { kind: 'content' },
    tracksDeletion: false,
    inputSchema: TicketObservationInput,
    indexes: [['ticket_id', 'observed_at'], ['observed_at']],
    partitionBy: 'observed_at',
    clusterBy: ['ticket_id'],
  },
  observationColumns,
  (input) => {
    const o = observationOf(input);
    const row: WarehouseRow = {};
    for (const c of observationColumns)
      row[c.name] = toColumnValue(c.type, (o as Record<string, unknown>)[c.name]);
    // No item of the API stands behind a sighting: `_raw` keeps the tracked state as written.
    row['_raw'] = storableJson(o);
    return row;
  },
);
