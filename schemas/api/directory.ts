import { z } from 'zod';
import { openBool, openEnum, openIdList, openText, openTimestamp, requiredId } from './open.js';

// Fields and payloads of tags, teams and agents: not shown (spec 2.6, 4.8), so every field is OPEN
// (schemas/api/open.ts). The companion's choices are documented in companion/README.md. Ids are opaque
// (spec 2.8 calls agent ids "opaque"); a number is read as its decimal text. An entry needs an id to be
// stored (its primary key); without one it is set aside in `_rejected`.

export const Tag = z.looseObject({
  id: requiredId(),
  name: openText(),
  created_at: openTimestamp(),
});
export type Tag = z.infer<typeof Tag>;

export const CreateTagBody = z.strictObject({ name: z.string().trim().min(1).max(100) });
export type CreateTagBody = z.infer<typeof CreateTagBody>;

export const Team = z.looseObject({
  id: requiredId(),
  name: openText(),
  agent_ids: openIdList(),
  created_at: openTimestamp(),
});
export type Team = z.infer<typeof Team>;

/** Agent kinds the companion serves; the connector reads any value. */
export const AgentKind = z.enum(['human', 'ai']);
export const Agent = z.looseObject({
  id: requiredId(),
  name: openText(),
  /** Null for AI agents. */
  email: openText(),
  kind: openEnum(AgentKind.options),
  active: openBool(),
  team_ids: openIdList(),
  created_at: openTimestamp(),
});
export type Agent = z.infer<typeof Agent>;

/** Page size of the directory lists (tags, teams, agents): not shown; ours 1–100, default 50, cursor pages. */
export const DIRECTORY_PAGE_LIMIT = { default: 50, max: 100 } as const;
export const DirectoryListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(DIRECTORY_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
});
