import { z } from 'zod';

/** Identifiers the spec types as UUID. */
export const Uuid = z.uuid();

/**
 * Timestamps are "opaque strings" (spec 2.1) that are ISO 8601 instants in practice. We require an explicit
 * offset (`Z` or `±hh:mm`) and accept any fractional precision (CSAT uses microseconds, spec 2.7).
 */
export const Timestamp = z.iso.datetime({ offset: true });
export type Timestamp = z.infer<typeof Timestamp>;

/** Channel values of spec 2.2. */
export const Channel = z.enum([
  'email',
  'widget',
  'whatsapp',
  'voice',
  'instagram',
  'facebook',
  'tiktok',
  'youtube',
  'contact_form',
]);
export type Channel = z.infer<typeof Channel>;

/** Ticket status values of spec 3. */
export const TicketStatus = z.enum(['open', 'need_more_info', 'resolved', 'closed']);
export type TicketStatus = z.infer<typeof TicketStatus>;

/** Ticket priority values of spec 2.2. */
export const Priority = z.enum(['none', 'urgent', 'high', 'medium', 'low']);
export type Priority = z.infer<typeof Priority>;

/** `ticket_type` of spec 2.2. */
export const TicketType = z.enum(['regular', 'side']);
export type TicketType = z.infer<typeof TicketType>;

/**
 * Metadata objects (spec 4.4): at most 50 keys, string values at most 2,000 characters.
 * Non-string values: not shown; we accept numbers, booleans and null as a real service would.
 */
export const Metadata = z
  .record(z.string(), z.union([z.string().max(2000), z.number(), z.boolean(), z.null()]))
  .refine((m) => Object.keys(m).length <= 50, { message: 'metadata has more than 50 keys' });
export type Metadata = z.infer<typeof Metadata>;
