import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';
import { openBool, openId, openText, requiredId } from './open.js';

/** The longest export window: 90 × 24 hours (spec 4.13, 4.14, 8). */
export const MAX_EXPORT_WINDOW_MS = 90 * 24 * 60 * 60 * 1000;
export const EXPORT_PAGE_LIMIT = { default: 50, max: 100 } as const;

/**
 * A CSAT survey export item (spec 2.7). `comment` is present only with `include_comments=true`.
 * STRICT: `id`/`ticket_id` (UUID), `ticket_number`, `attribution_source` (its two values), `score` (1–5 or
 * null), `sent_at`/`submitted_at`. OPEN: `credited_agent_id` (opaque), `credited_agent_name`, `comment`
 * (plain strings); unknown fields kept in `_raw`.
 */
export const CsatSurvey = z.looseObject({
  id: Uuid,
  ticket_id: Uuid,
  ticket_number: z.number().int().positive().nullable(),
  credited_agent_id: openId(),
  credited_agent_name: openText(),
  attribution_source: z.enum(['survey_agent_id', 'unattributed']),
  score: z.number().int().min(1).max(5).nullable(),
  sent_at: Timestamp,
  submitted_at: Timestamp.nullable(),
  comment: openText().optional(),
});
export type CsatSurvey = z.infer<typeof CsatSurvey>;

/** Response `meta` of the CSAT export (spec 2.7): informational, so read loosely (never fails a page). */
export const CsatMeta = z.looseObject({
  attribution: openText(),
  comments_included: openBool(),
  privacy: openText(),
});
export type CsatMeta = z.infer<typeof CsatMeta>;

/** Query of `GET /csat-surveys` (spec 4.13); pair and window rules are checked by the server. */
export const CsatQuery = z.strictObject({
  submitted_from: Timestamp.optional(),
  submitted_before: Timestamp.optional(),
  sent_from: Timestamp.optional(),
  sent_before: Timestamp.optional(),
  credited_agent_id: z.string().min(1).optional(),
  score_lte: z.coerce.number().int().min(1).max(5).optional(),
  include_comments: z.enum(['true', 'false']).optional(),
  limit: z.coerce.number().int().min(1).max(EXPORT_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
});
export type CsatQuery = z.infer<typeof CsatQuery>;

/**
 * An agent login session export item (spec 2.8): every field is defined, so STRICT, except `agent_id`, an
 * "opaque string" (a number is read as its text). Unknown fields kept in `_raw`.
 */
export const AgentSession = z.looseObject({
  id: Uuid,
  agent_id: requiredId(),
  session_start: Timestamp,
  session_end: Timestamp.nullable(),
  last_activity: Timestamp,
  updated_at: Timestamp,
});
export type AgentSession = z.infer<typeof AgentSession>;

/**
 * Response `meta` of the session export (spec 2.8). Informational: read loosely so that a server that words
 * it differently never fails a page.
 */
export const AgentSessionMeta = z.looseObject({
  date_filter: openText(),
  order_by: openText(),
  stale_open_records_included: openBool(),
  mutable: openBool(),
  break_history_stored: openBool(),
  description: openText(),
});
export type AgentSessionMeta = z.infer<typeof AgentSessionMeta>;

/** Query of `GET /agent-sessions` (spec 4.14). */
export const AgentSessionQuery = z.strictObject({
  from: Timestamp,
  before: Timestamp,
  agent_id: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(EXPORT_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
});
export type AgentSessionQuery = z.infer<typeof AgentSessionQuery>;
