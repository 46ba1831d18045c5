import { z } from 'zod';
import { Uuid } from './common.js';
import { openBool, openJson, openText } from './open.js';

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

/**
 * A saved inbox view (spec 2.4). STRICT: `id` (UUID), `count` (a count). OPEN: `name`, `shared`, and
 * `filters` (structure of the entries: not shown — kept whole as JSON; `ViewFilter` above is the
 * companion's reading, which reconciliation understands and skips otherwise).
 */
export const View = z.looseObject({
  id: Uuid,
  name: openText(),
  count: z.number().int().nonnegative(),
  filters: openJson(),
  shared: openBool(),
});
export type View = z.infer<typeof View>;

/** Query of `GET /views` (spec 4.9). */
export const VIEW_PAGE_LIMIT = { default: 50, max: 100 } as const;
export const ViewListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(VIEW_PAGE_LIMIT.max).optional(),
  cursor: z.string().min(1).optional(),
});
