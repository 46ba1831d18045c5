import { z } from 'zod';
import { Timestamp, Uuid } from './common.js';

/** The longest export window: 90 × 24 hours (spec 4.13, 4.14, 8). */
export const MAX_EXPORT_WINDOW_MS = 90 * 24 * 60 * 60 * 1000;
export const EXPORT_PAGE_LIMIT = { default: 50, max: 100 } as const;

/** A CSAT survey export item (spec 2.7). `comment` is present only with `include_comments=true`. */
export const CsatSurvey = z.object({
  id: Uuid,
  ticket_id: Uuid,
  ticket_number: z.number().int().positive().nullable(),
  credited_agent_id: z.string().nullable(),
  credited_agent_name: z.string().nullable(),
  attribution_source: z.enum(['survey_agent_id', 'unattributed']),
  score: z.number().int().min(1).max(5).nullable(),
  sent_at: Timestamp,
  submitted_at: Timestamp.nullable(),
  comment: z.string().nullable().optional(),
});
export type CsatSurvey = z.infer<typeof CsatSurvey>;

export const CsatMeta = z.object({
  attribution: z.string(),
  comments_included: z.boolean(),
  privacy: z.string(),
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

/** An agent login session export item (spec 2.8). */
export const AgentSession = z.object({
  id: Uuid,
  agent_id: z.string().min(1),
  session_start: Timestamp,
  session_end: Timestamp.nullable(),
  last_activity: Timestamp,
  updated_at: Timestamp,
});
export type AgentSession = z.infer<typeof AgentSession>;

export const AgentSessionMeta = z.object({
  date_filter: z.literal('recorded_interval_overlap'),
  order_by: z.literal('session_start,id'),
  stale_open_records_included: z.boolean(),
  mutable: z.boolean(),
  break_history_stored: z.literal(false),
  description: z.string(),
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
