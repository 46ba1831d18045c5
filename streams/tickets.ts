import { Ticket } from '../schemas/api/tickets.js';
import { defineStream } from './define.js';

/** Tickets: the sweep of the whole ticket list (architecture decision 4), with their custom fields. */
export const tickets = defineStream({
  name: 'tickets',
  kind: 'tickets',
  table: 'tickets',
  routeClass: 'list',
  endpoint: 'GET /tickets',
  scope: 'tickets:read',
  // With their custom field values (spec 4.1).
  page: { item: Ticket, query: () => ({ include: 'ticket_fields' }) },
  warehouse: {
    description:
      'One row per ticket (GET /tickets with include=ticket_fields). Version: updated_at. Tickets gone from the source are marked with _deleted_at by a full refresh.',
    schema: Ticket,
    primaryKey: ['id'],
    merge: { kind: 'version', column: 'updated_at' },
    tracksDeletion: true,
    derive: {
      flatten: ['contact'],
      descriptions: {
        id: 'Ticket id (UUID). Primary key.',
        ticket_number: 'Human-facing ticket number (used in API paths).',
        subject: 'Subject line; null when the ticket has none.',
        status: 'Lifecycle status.',
        priority: 'Priority.',
        channel: 'Channel the ticket came in through.',
        created_at: 'When the ticket was created.',
        updated_at: 'When the ticket last changed (the version of the row).',
        tags: 'Tag names on the ticket (JSON array of strings).',
        contact_id: 'Contact id (UUID); null when the ticket has no contact.',
        contact_email: 'Contact e-mail address.',
        contact_first_name: 'Contact first name.',
        contact_last_name: 'Contact last name.',
        contact_phone: 'Contact phone number.',
        ticket_type: 'Regular ticket or side conversation.',
        parent_ticket_id: 'Parent ticket id for side conversations.',
        assignee_id: 'Assigned agent id (joins agents.id); null when unassigned.',
        team_id: 'Assigned team id (joins teams.id).',
        language: 'Detected or set language.',
        is_spam: 'Marked as spam.',
        resolved_at: 'When the ticket was last resolved.',
        ticket_fields:
          'Custom field values (JSON array of {field_id, name, type, value}); null when not requested.',
      },
    },
    indexes: [['created_at'], ['updated_at'], ['ticket_number'], ['assignee_id'], ['team_id'], ['status']],
    partitionBy: 'created_at',
    clusterBy: ['status', 'assignee_id', 'team_id', 'ticket_number'],
  },
  // Every change moves it.
  freshness: 'updated_at',
  freshnessTarget: { warnHours: 2, errorHours: 12 },
  // GET /tickets/:ticketNumber is a detail route (spec 8), not the list route the tickets stream reads.
  audit: { unit: 'ticket', routeClass: 'detail', seedColumn: 'ticket_number', streams: ['tickets'] },
});
