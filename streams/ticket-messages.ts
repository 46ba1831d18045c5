import { Message } from '../schemas/api/messages.js';
import { defineStream } from './define.js';

/** Messages per thread page: the most the API serves (a thread costs one request per this many messages). */
export const THREAD_PAGE_LIMIT = 100;

/** Ticket threads, read from the queue the ticket pages fill (spec 4.5), oldest message first. */
export const ticketMessages = defineStream({
  name: 'ticket_messages',
  kind: 'threads',
  table: 'ticket_messages',
  routeClass: 'detail',
  endpoint: 'GET /tickets/:ticketNumber/messages',
  scope: 'tickets:read',
  page: { item: Message, limit: THREAD_PAGE_LIMIT, query: () => ({ order: 'asc' }) },
  // A deleted ticket's thread is not served; a restored ticket's messages come back with its next thread read.
  followsTicketDeletion: { revive: false },
  warehouse: {
    description:
      'One row per thread item of a ticket (GET /tickets/:ticketNumber/messages). No source version: the latest sync wins when the content differs (delivery status changes over time). A full refresh re-reads every thread and sets _deleted_at on messages no longer served (e.g. of deleted tickets).',
    schema: Message,
    primaryKey: ['id'],
    merge: { kind: 'content' },
    tracksDeletion: true,
    derive: {
      descriptions: {
        id: 'Message id (UUID). Primary key.',
        ticket_id: 'Ticket id (joins tickets.id).',
        ticket_number: 'Ticket number (joins tickets.ticket_number).',
        role: 'Who wrote it: customer, agent or ai.',
        direction: 'inbound or outbound.',
        text: 'Plain-text body.',
        channel: 'Channel of the message.',
        author_name: 'Display name of the author.',
        status: 'Delivery status (queued, sent, delivered, failed or a later value). Can change.',
        created_at: 'When the message was created.',
        attachments: 'Attachments (JSON array of {id, file_name, mime_type, size, public_url}).',
      },
    },
    indexes: [['ticket_id', 'created_at'], ['ticket_number'], ['created_at']],
    partitionBy: 'created_at',
    clusterBy: ['ticket_id', 'role'],
  },
  // Messages have no other time.
  freshness: 'created_at',
  freshnessTarget: { warnHours: 6, errorHours: 24 },
  audit: { unit: 'thread', seedColumn: 'ticket_number', streams: ['ticket_messages'] },
});
