import { z } from 'zod';
import { Timestamp } from './common.js';

/** `data` of `GET /health`. Body: not shown (spec 4.10); our choice. */
export const Health = z.object({
  status: z.enum(['ok', 'degraded']),
  version: z.literal('v1'),
  time: Timestamp,
});
export type Health = z.infer<typeof Health>;
