import { z } from 'zod';

const IanaZone = z.string().refine(
  (tz) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
      return true;
    } catch {
      return false;
    }
  },
  { message: 'must be an IANA time zone such as Europe/Berlin or UTC' },
);

/** A saved report query (one entry of the REPORT_QUERIES file): sent to `POST /reports/query` as is. */
export const ReportQuery = z.strictObject({
  /** Names the query in `_sync_state` (scope), failures and the docs; unique within the file. */
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, {
    message: 'must be 1–100 letters, digits, "_", "." or "-", starting with a letter or digit',
  }),
  query: z.string().trim().min(1, { message: 'must be a non-empty report query' }),
  timezone: IanaZone,
  /**
   * Its own schedule (`schedule create` makes one Temporal schedule per such query, running only this
   * query's snapshot); without it the query is taken by every sync run.
   */
  schedule: z
    .strictObject({
      cron: z
        .string()
        .trim()
        .regex(/^\S+( \S+){4}$/, { message: 'must be a 5-field cron expression such as "0 6 * * *"' }),
      timezone: IanaZone,
    })
    .optional(),
});
export type ReportQuery = z.infer<typeof ReportQuery>;
