import { z } from 'zod';
import { Channel, Metadata, Timestamp, Uuid } from './common.js';
import { openEnum, openJson, openText } from './open.js';

/** Attachment on a message as the COMPANION serves it (item shape not shown, spec 2.3; its choice). */
export const MessageAttachment = z.object({
  id: Uuid,
  file_name: z.string(),
  mime_type: z.string(),
  size: z.number().int().nonnegative(),
  public_url: z.url(),
});
export type MessageAttachment = z.infer<typeof MessageAttachment>;

/** Roles the companion serves. The spec gives `agent` only "for example": the connector reads any role. */
export const MessageRole = z.enum(['customer', 'agent', 'ai']);
export type MessageRole = z.infer<typeof MessageRole>;

/**
 * Delivery states: `queued`, `sent`, `delivered`, `failed` "and possibly others" (spec 2.3/3), so the
 * reading side accepts any value; these are the ones the companion emits.
 */
export const KNOWN_MESSAGE_STATUSES = ['queued', 'sent', 'delivered', 'failed'] as const;

/** Directions the companion serves (the spec gives `outbound` "for example"): any direction is read. */
export const KNOWN_MESSAGE_DIRECTIONS = ['inbound', 'outbound'] as const;

/**
 * A thread item (spec 2.3).
 * STRICT: `id`, `ticket_id` (UUID), `ticket_number` (integer), `channel` (the channel values), `created_at`.
 * OPEN: `role` and `direction` ("for example"), `status` ("possibly others"), `text` and `author_name`
 * (plain strings), `attachments` (item shape not shown: kept whole as JSON); unknown fields kept in `_raw`.
 */
export const Message = z.looseObject({
  id: Uuid,
  ticket_id: Uuid,
  ticket_number: z.number().int().positive(),
  role: openEnum(MessageRole.options),
  direction: openEnum(KNOWN_MESSAGE_DIRECTIONS),
  text: openText(),
  channel: Channel,
  author_name: openText(),
  status: openEnum(KNOWN_MESSAGE_STATUSES),
  created_at: Timestamp,
  attachments: openJson(),
});
export type Message = z.infer<typeof Message>;

/** Query of `GET /tickets/:ticketNumber/messages` (spec 4.3). Limit default/max: not shown; ours 50/100. */
export const MESSAGE_PAGE_LIMIT = { default: 50, max: 100 } as const;
export const MessageListQuery = z.strictObject({
  order: z.enum(['asc', 'desc']).optional(),
  limit: z.coerce.number().int().min(1).max(MESSAGE_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
});
export type MessageListQuery = z.infer<typeof MessageListQuery>;

/** Body of `POST /tickets/:ticketNumber/messages` (spec 4.6). */
export const SendMessageBody = z
  .strictObject({
    type: z.enum(['reply', 'note']).optional(),
    body: z.string().max(100_000).optional(),
    html_body: z.string().max(100_000).optional(),
    channel: Channel.optional(),
    channel_identifier: z.string().optional(),
    from_agent: z.string().email().optional(),
    attachment_ids: z.array(Uuid).max(10).optional(),
    skip_email: z.boolean().optional(),
    metadata: Metadata.optional(),
  })
  .refine((b) => b.body !== undefined || b.html_body !== undefined, {
    message: 'one of body or html_body is required',
    path: ['body'],
  })
  .refine((b) => b.channel_identifier === undefined || b.channel !== undefined, {
    message: 'channel_identifier is used only together with channel',
    path: ['channel_identifier'],
  });
export type SendMessageBody = z.infer<typeof SendMessageBody>;
