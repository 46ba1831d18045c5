import { Duration, IANAZone } from 'luxon';
import { z } from 'zod';

/**
 * The workspace a deployment's own settings (SUPPORT_API_URL, SUPPORT_API_KEY, POSTGRES_SCHEMA, …) describe:
 * runs, workflow ids and tables exactly as a deployment of one workspace has them.
 */
export const DEFAULT_WORKSPACE = 'default';

/**
 * A workspace's id: a short slug, part of workflow and schedule ids, of the `Workspace` search attribute, of
 * the fairness key (at most 64 bytes) and of the schema (dataset) name, so lower-case letters, digits and
 * `-`, at most 40 characters.
 */
export const WorkspaceId = z
  .string()
  .regex(
    /^[a-z][a-z0-9-]{0,39}$/,
    'must be a slug: a lower-case letter, then lower-case letters, digits or -, at most 40 characters',
  );
export type WorkspaceId = z.infer<typeof WorkspaceId>;

/**
 * How a deployment stores its workspaces (SYNC_WAREHOUSE_LAYOUT): a schema (BigQuery: dataset) each, or the
 * deployment's one schema with a `workspace_id` column first in every table's key. docs/design/decisions.md
 * says why schema-per-workspace tables carry no such column.
 */
export const WarehouseLayout = z.enum(['schema-per-workspace', 'shared-tables']);
export type WarehouseLayout = z.infer<typeof WarehouseLayout>;

/**
 * Where a workspace's API key is: an environment variable's name, or a file (a mounted secret). Never the key
 * itself: the workspaces file is configuration, kept in a repository or a ConfigMap.
 */
export const KeyReference = z.union([
  z.strictObject({
    env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name'),
  }),
  z.strictObject({ file: z.string().min(1) }),
]);
export type KeyReference = z.infer<typeof KeyReference>;

/**
 * The settings a workspace may set for itself, by their environment names (docs/configuration.md): what it
 * reads and how much of its key it spends. The rest (Temporal, the warehouse, logging) belongs to the
 * deployment; the URL, the key and the schema have fields of their own.
 */
export const WORKSPACE_SETTINGS = [
  'SYNC_STREAMS',
  'SYNC_START_DATE',
  'SYNC_LOOKBACK',
  'SYNC_WINDOW',
  'SYNC_THREAD_LOOKBACK',
  'SYNC_SWEEP_PAGES_PER_RUN',
  'SYNC_THREAD_REVERIFY_PER_RUN',
  'SYNC_CSAT_COMMENTS',
  'SYNC_PAGE_SIZE',
  'SYNC_COLUMN_POLICY',
  'SYNC_BUSINESS_HOURS',
  'SYNC_FRESHNESS_SLO',
  'SYNC_AUDIT_SHARE',
  'REPORT_QUERIES',
  'SUPPORT_API_RATE_LIMITS',
  'SUPPORT_API_RATE_WINDOW',
  'SUPPORT_API_RATE_SHARE',
] as const;

/** A setting's value as the environment would give it: text (YAML numbers and booleans are taken as written). */
const SettingValue = z.union([z.string(), z.number(), z.boolean()]).transform((v) => String(v));

/**
 * A workspace's own recurring syncs: each field replaces the `schedule create` flag of its name for this
 * workspace (`--every`, `--full-refresh-cron`, `--timezone`).
 */
export const WorkspaceSchedule = z.strictObject({
  every: z
    .string()
    .refine(
      (every) => {
        const duration = Duration.fromISO(every);
        return duration.isValid && duration.as('seconds') >= 60;
      },
      { message: 'must be an ISO 8601 duration of at least PT1M (e.g. PT1H)' },
    )
    .optional()
    .describe('Interval of its incremental syncs'),
  fullRefreshCron: z.string().min(1).optional().describe('Cron of its full refreshes, in `timezone`'),
  timezone: z
    .string()
    .refine((tz) => IANAZone.isValidZone(tz), { message: 'expected an IANA time zone (e.g. Europe/Berlin)' })
    .optional()
    .describe('Time zone of its full-refresh cron'),
});
export type WorkspaceSchedule = z.infer<typeof WorkspaceSchedule>;

export const WorkspaceEntry = z.strictObject({
  id: WorkspaceId.refine((id) => id !== DEFAULT_WORKSPACE, {
    message: `"${DEFAULT_WORKSPACE}" is the workspace of the deployment's own settings; pick another id`,
  }),
  /** The workspace's API base URL (SUPPORT_API_URL's rules). */
  url: z.string().min(1),
  key: KeyReference,
  /**
   * The PostgreSQL schema, or the BigQuery dataset, its tables go to; default: the deployment's own
   * (POSTGRES_SCHEMA, or DESTINATION_URL's dataset) with `_<id>` appended (`-` as `_`).
   */
  schema: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/, 'must be lower-case letters, digits and _, not starting with a digit')
    .optional(),
  schedule: WorkspaceSchedule.optional().describe("Its own schedule (`schedule create`'s flags otherwise)"),
  settings: z
    .partialRecord(z.enum(WORKSPACE_SETTINGS), SettingValue)
    .optional()
    .describe("Settings of this workspace that replace the deployment's, by environment name"),
});
export type WorkspaceEntry = z.infer<typeof WorkspaceEntry>;

/** The SYNC_WORKSPACES_FILE: `workspaces:`, a list of entries, ids and schemas unique. */
export const WorkspacesFile = z
  .strictObject({ workspaces: z.array(WorkspaceEntry) })
  .superRefine(({ workspaces }, ctx) => {
    const ids = new Map<string, number>();
    const schemas = new Map<string, number>();
    workspaces.forEach((w, i) => {
      const earlier = ids.get(w.id);
      if (earlier !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['workspaces', i, 'id'],
          message: `"${w.id}" is the id of entry ${earlier + 1} too`,
        });
      ids.set(w.id, i);
      if (w.schema !== undefined) {
        const other = schemas.get(w.schema);
        if (other !== undefined)
          ctx.addIssue({
            code: 'custom',
            path: ['workspaces', i, 'schema'],
            message: `"${w.schema}" is the schema of entry ${other + 1} too: two workspaces never share tables`,
          });
        schemas.set(w.schema, i);
      }
    });
  });
export type WorkspacesFile = z.infer<typeof WorkspacesFile>;

/** The schema (dataset) of workspace `id` when its entry names none: the deployment's, `_<id>` appended. */
export function defaultWorkspaceSchema(deploymentSchema: string, id: WorkspaceId): string {
  return `${deploymentSchema}_${id.replaceAll('-', '_')}`;
}

/** The activity header naming the workspace an activity works for (workflows/workspace-interceptors.ts). */
export const WORKSPACE_HEADER = 'workspace';
