import { z } from 'zod';
import { Uuid } from './common.js';

/**
 * One saved-view filter. Structure: not shown (spec 2.4 says "a condition plus options"); our choice:
 * the ticket attribute, an operator and the option values it compares with. Read side keeps `condition`
 * open so that a new condition type does not fail a sync.
 */
export const ViewFilter = z.object({
  condition: z.string().min(1),
  operator: z.enum(['is', 'is_not', 'is_one_of']),
  options: z.array(z.string()),
});
export type ViewFilter = z.infer<typeof ViewFilter>;

/** Conditions the companion implements: `status`, `channel`, `priority`, `tag`, `team`, `assignee`. */
export const KNOWN_VIEW_CONDITIONS = ['status', 'channel', 'priority', 'tag', 'team', 'assignee'] as const;

/** A saved inbox view (spec 2.4). */
export const View = z.object({
  id: Uuid,
  name: z.string(),
  count: z.number().int().nonnegative(),
  filters: z.array(ViewFilter),
  shared: z.boolean(),
});
export type View = z.infer<typeof View>;

/** Query of `GET /views` (spec 4.9). */
export const VIEW_PAGE_LIMIT = { default: 50, max: 100 } as const;
export const ViewListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(VIEW_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
});
