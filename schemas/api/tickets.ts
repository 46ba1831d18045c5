import { z } from 'zod';
import { Channel, Metadata, Priority, TicketStatus, TicketType, Timestamp, Uuid } from './common.js';
import { customFieldValues, TicketFieldType } from './custom-fields.js';
import { openBool, openEnum, openId, openObject, openText, openTimestamp } from './open.js';

export { TicketFieldType } from './custom-fields.js';

/**
 * Contact object on a ticket. Shape: not shown (spec 2.2), so OPEN (schemas/api/open.ts): the companion
 * serves `{id, email, first_name, last_name, phone}` (mirroring the creation input); a real workspace may
 * send a numeric or non-UUID id, nested name objects, more keys or fewer. The typed columns read these five
 * keys where they fit; everything else stays in `_raw`.
 */
export const Contact = openObject({
  id: openId(),
  email: openText(),
  first_name: openText(),
  last_name: openText(),
  phone: openText(),
});
export type Contact = z.infer<typeof Contact>;

/**
 * A custom ticket field value as the COMPANION serves it, with `include=ticket_fields` (shape not shown,
 * spec 2.2): the field's definition id, its label and type, and a value whose JSON type follows the type.
 * The connector does not require this shape (see `Ticket.ticket_fields`).
 */
export const TicketFieldValue = z.object({
  field_id: z.string().min(1),
  name: z.string(),
  type: TicketFieldType,
  value: z.union([z.string(), z.number(), z.boolean(), z.array(z.string()), z.null()]),
});
export type TicketFieldValue = z.infer<typeof TicketFieldValue>;

/**
 * A ticket as read from `GET /tickets` and `GET /tickets/:ticketNumber` (spec 2.2).
 * STRICT (the spec's table): `id` UUID, `ticket_number` integer, `status`/`priority`/`channel` (closed
 * sets of spec 2.2/3), `created_at`/`updated_at` timestamps, `tags` string[].
 * OPEN: `subject` (a string, nullable in practice), the contact, custom-field values, and every further
 * field ("further ticket fields: not shown") — the companion's extras below are read when present and null
 * when missing; unknown fields are kept in `_raw`.
 */
export const Ticket = z.looseObject({
  id: Uuid,
  ticket_number: z.number().int().positive(),
  subject: openText(),
  status: TicketStatus,
  priority: Priority,
  channel: Channel,
  created_at: Timestamp,
  updated_at: Timestamp,
  tags: z.array(z.string()),
  contact: Contact,
  // --- further ticket fields: not shown (spec 2.2); read when present (see companion/README.md) ---
  ticket_type: openEnum(TicketType.options),
  parent_ticket_id: openId(),
  assignee_id: openId(),
  team_id: openId(),
  language: openText(),
  is_spam: openBool(),
  resolved_at: openTimestamp(),
  /**
   * Only with `include=ticket_fields`; value shape not shown: kept whole as JSON, its entries read as custom
   * fields (schemas/api/custom-fields.ts) for `_schema_changes` and the view `ticket_custom_fields`.
   */
  ticket_fields: customFieldValues().optional(),
});
export type Ticket = z.infer<typeof Ticket>;

/** Query of `GET /tickets` (spec 4.1). Default and maximum `limit`: not shown; our choice 50 and 100. */
export const TICKET_PAGE_LIMIT = { default: 50, max: 100 } as const;
export const TicketListQuery = z.strictObject({
  view_id: Uuid.optional(),
  limit: z.coerce.number().int().min(1).max(TICKET_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
  include: z.literal('ticket_fields').optional(),
});
export type TicketListQuery = z.infer<typeof TicketListQuery>;

const ContactInput = z.strictObject({
  email: z.string().email().optional(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  phone: z.string().optional(),
});

/** One entry of `messages[]` in `POST /tickets` (spec 4.4). */
export const CreateTicketMessageInput = z.strictObject({
  channel: Channel.optional(),
  from_agent: z.boolean().optional(),
  body: z.string().max(100_000).optional(),
  html_body: z.string().max(100_000).optional(),
  prefilled_input: z.boolean().optional(),
  from: ContactInput.optional(),
  skip_email: z.boolean().optional(),
  metadata: Metadata.optional(),
  attachment_ids: z.array(Uuid).max(10).optional(),
});
export type CreateTicketMessageInput = z.infer<typeof CreateTicketMessageInput>;

/** Body of `POST /tickets` (spec 4.4). Unknown fields are rejected (strict). */
export const CreateTicketBody = z.strictObject({
  channel: Channel,
  subject: z.string().max(500).optional(),
  note: z.string().max(10_000).optional(),
  tags: z.array(z.string().min(1).max(100)).max(20).optional(),
  metadata: Metadata.optional(),
  channel_identifier: z.string().optional(),
  priority: Priority.optional(),
  status: TicketStatus.optional(),
  language: z.string().optional(),
  is_spam: z.boolean().optional(),
  ticket_type: TicketType.optional(),
  parent_ticket_id: Uuid.optional(),
  assignee_email: z.string().email().optional(),
  contact: ContactInput.optional(),
  messages: z.array(CreateTicketMessageInput).max(10).optional(),
});
export type CreateTicketBody = z.infer<typeof CreateTicketBody>;

/**
 * Body of `POST /tickets/:ticketNumber` (spec 4.5): status, priority or assignee. Field names: not shown;
 * our choice reuses the creation names, with `assignee_email: null` to unassign. At least one is required.
 */
export const UpdateTicketBody = z
  .strictObject({
    status: TicketStatus.optional(),
    priority: Priority.optional(),
    assignee_email: z.string().email().nullable().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'at least one of status, priority, assignee_email' });
export type UpdateTicketBody = z.infer<typeof UpdateTicketBody>;
