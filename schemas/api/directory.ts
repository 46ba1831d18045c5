import { z } from 'zod';
import { Timestamp } from './common.js';

// Fields and payloads of tags, teams and agents: not shown (spec 2.6, 4.8). Our choices, documented in
// companion/README.md. Ids are opaque strings (spec 2.8 calls agent ids "opaque").

export const Tag = z.object({
  id: z.string().min(1),
  name: z.string().min(1).max(100),
  created_at: Timestamp,
});
export type Tag = z.infer<typeof Tag>;

export const CreateTagBody = z.strictObject({ name: z.string().trim().min(1).max(100) });
export type CreateTagBody = z.infer<typeof CreateTagBody>;

export const Team = z.object({
  id: z.string().min(1),
  name: z.string(),
  agent_ids: z.array(z.string()),
  created_at: Timestamp,
});
export type Team = z.infer<typeof Team>;

export const AgentKind = z.enum(['human', 'ai']);
export const Agent = z.object({
  id: z.string().min(1),
  name: z.string(),
  /** Null for AI agents. */
  email: z.string().nullable(),
  kind: AgentKind,
  active: z.boolean(),
  team_ids: z.array(z.string()),
  created_at: Timestamp,
});
export type Agent = z.infer<typeof Agent>;

/** Page size of the directory lists (tags, teams, agents): not shown; ours 1–100, default 50, cursor pages. */
export const DIRECTORY_PAGE_LIMIT = { default: 50, max: 100 } as const;
export const DirectoryListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(DIRECTORY_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
});
