import { createHash } from 'node:crypto';
import {
  type Client,
  type ScheduleDescription,
  ScheduleNotFoundError,
  type ScheduleOptions,
  ScheduleOverlapPolicy,
} from '@temporalio/client';
import { Duration } from 'luxon';
import type { Config } from '../../schemas/config.js';
import type { SyncRunInput } from '../../schemas/run-input.js';
import { ALL_STREAMS, type StreamName } from '../../schemas/streams.js';
import { DEFAULT_WORKSPACE } from '../../schemas/workspaces.js';
import { ConfigError, settingsFromConfig, workspaceConfigLoader } from '../../worker/config.js';
import { deploymentNameOf } from '../../worker/deployment-version.js';
import { workspaceStartOptions } from '../../worker/run-sync.js';
import { readWorkspacesFile } from '../../worker/workspace-config.js';
import { WorkspaceKey } from '../../workflows/search-attributes.js';
import { reportFailure, withTemporal } from './context.js';

/** The ids of one workspace's schedules. */
export interface ScheduleIds {
  incremental: string;
  fullRefresh: string;
  /** One schedule per saved report query that carries its own `schedule` (REPORT_QUERIES): prefix + name. */
  reportPrefix: string;
}

/**
 * A workspace's schedule ids, prefixed by its deployment's name (TEMPORAL_DEPLOYMENT_NAME, default the task
 * queue): the deployment's own workspace keeps the ids it always had (`support-sync-incremental`, …), and a
 * second deployment in the namespace has its own. A workspace of SYNC_WORKSPACES_FILE adds its id
 * (`<deployment>-<workspace>-incremental`).
 */
export function scheduleIdsOf(scope: { deployment: string; workspace?: string }): ScheduleIds {
  const prefix =
    scope.workspace && scope.workspace !== DEFAULT_WORKSPACE
      ? `${scope.deployment}-${scope.workspace}`
      : scope.deployment;
  return {
    incremental: `${prefix}-incremental`,
    fullRefresh: `${prefix}-full-refresh`,
    reportPrefix: `${prefix}-report-`,
  };
}

export function scheduleIdsFor(config: Config): ScheduleIds {
  return scheduleIdsOf({ deployment: deploymentNameOf(config), workspace: config.SYNC_WORKSPACE });
}

/** The memo key, on the runs a schedule starts, of what `schedule create` made it from. */
const DEFINITION_MEMO = 'supportSyncSchedule';

interface ScheduleDefinition {
  /** `fingerprint`: a hash of spec, action and policies; `when`: the spec as the command took it. */
  memo: { fingerprint: string; when: string };
}

type OwnSchedule = ScheduleDescription & ScheduleDefinition;

/** The workspace whose runs a schedule starts: its runs' `Workspace` search attribute, none: the deployment's. */
function workspaceOfSchedule(described: ScheduleDescription): string {
  const action = described.action;
  const attributes = action.type === 'startWorkflow' ? action.typedSearchAttributes : undefined;
  const value = Array.isArray(attributes)
    ? attributes.find((pair) => pair.key.name === WorkspaceKey.name)?.value
    : attributes?.get(WorkspaceKey);
  return typeof value === 'string' ? value : DEFAULT_WORKSPACE;
}

/**
 * The schedule `scheduleId` as this workspace has it (null: none), or an error when the id is taken by a
 * schedule that starts runs on another task queue (another deployment with the same
 * TEMPORAL_DEPLOYMENT_NAME) or of another workspace (two ids that coincide, as a workspace `report-x` and a
 * report query `x-incremental` would).
 */
async function ownSchedule(
  client: Client,
  scheduleId: string,
  taskQueue: string,
  workspace: string,
): Promise<OwnSchedule | null> {
  const described = await client.schedule
    .getHandle(scheduleId)
    .describe()
    .catch((err: unknown) => {
      if (err instanceof ScheduleNotFoundError) return null;
      throw err;
    });
  if (!described) return null;
  const action = described.action;
  if (action.type !== 'startWorkflow' || action.taskQueue !== taskQueue)
    throw new Error(
      `schedule ${scheduleId} starts runs on task queue ${action.type === 'startWorkflow' ? action.taskQueue : '(none)'}, not ${taskQueue}: it belongs to another deployment; give this one its own TEMPORAL_DEPLOYMENT_NAME`,
    );
  const of = workspaceOfSchedule(described);
  if (of !== workspace)
    throw new Error(
      `schedule ${scheduleId} starts runs of workspace "${of}", not "${workspace}": their schedule ids coincide; rename the workspace or the report query`,
    );
  const memo = (action.memo?.[DEFINITION_MEMO] ?? {}) as Partial<ScheduleDefinition['memo']>;
  return Object.assign(described, {
    memo: { fingerprint: memo.fingerprint ?? '', when: memo.when ?? '(not made by schedule create)' },
  });
}

/** Every schedule id of the namespace that begins with the deployment's name (listed once per command). */
async function idsOfDeployment(client: Client, deployment: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const s of client.schedule.list())
    if (s.scheduleId.startsWith(`${deployment}-`)) ids.push(s.scheduleId);
  return ids;
}

/**
 * A workspace's schedules that exist now: its incremental and full-refresh ones (described by id, so one
 * created a moment ago is found), and its report ones found in `listed` by prefix, workspace and task queue.
 */
async function existingSchedules(
  client: Client,
  ids: ScheduleIds,
  taskQueue: string,
  workspace: string,
  listed: readonly string[],
): Promise<Map<string, OwnSchedule>> {
  const found = new Map<string, OwnSchedule>();
  for (const scheduleId of [ids.incremental, ids.fullRefresh]) {
    const own = await ownSchedule(client, scheduleId, taskQueue, workspace);
    if (own) found.set(scheduleId, own);
  }
  for (const scheduleId of listed) {
    if (!scheduleId.startsWith(ids.reportPrefix) || found.has(scheduleId)) continue;
    // A report-prefixed schedule of another deployment (whose name extends this one's) or of another
    // workspace (whose id extends `report-`) is not this workspace's.
    const own = await ownSchedule(client, scheduleId, taskQueue, workspace).catch(() => null);
    if (own) found.set(scheduleId, own);
  }
  return found;
}

/**
 * This deployment's schedules of workspaces not in `workspaces` (removed from SYNC_WORKSPACES_FILE): ids
 * of the deployment, starting runs on its task queue, of a workspace the configuration no longer has.
 */
async function schedulesOfRemovedWorkspaces(
  client: Client,
  deployment: string,
  taskQueue: string,
  workspaces: readonly string[],
  listed: readonly string[],
): Promise<Map<string, string>> {
  const removed = new Map<string, string>();
  for (const scheduleId of listed) {
    const described = await client.schedule
      .getHandle(scheduleId)
      .describe()
      .catch(() => null);
    if (described?.action.type !== 'startWorkflow' || described.action.taskQueue !== taskQueue) continue;
    const workspace = workspaceOfSchedule(described);
    if (workspaces.includes(workspace)) continue;
    const ids = scheduleIdsOf({ deployment, workspace });
    const made =
      scheduleId === ids.incremental ||
      scheduleId === ids.fullRefresh ||
      scheduleId.startsWith(ids.reportPrefix);
    if (made) removed.set(scheduleId, workspace);
  }
  return removed;
}

/**
 * The recurring schedules whose runs read other streams than `streams` (a worker's SYNC_STREAMS): a
 * schedule's streams are fixed when it is created, so a changed SYNC_STREAMS needs `schedule update`.
 * Schedules that do not exist, or cannot be read, are not reported.
 */
export async function schedulesReadingOtherStreams(
  client: Client,
  ids: ScheduleIds,
  streams: readonly StreamName[],
): Promise<{ scheduleId: string; streams: string[] }[]> {
  const differing: { scheduleId: string; streams: string[] }[] = [];
  for (const scheduleId of [ids.incremental, ids.fullRefresh]) {
    const action = await client.schedule
      .getHandle(scheduleId)
      .describe()
      .then((d) => d.action)
      .catch(() => null);
    const input =
      action?.type === 'startWorkflow' ? (action.args?.[0] as Partial<SyncRunInput> | undefined) : undefined;
    const scheduled = input?.streams;
    if (!Array.isArray(scheduled)) continue;
    const same = scheduled.length === streams.length && streams.every((s) => scheduled.includes(s));
    if (!same) differing.push({ scheduleId, streams: scheduled });
  }
  return differing;
}

type Wanted = Pick<ScheduleOptions, 'scheduleId' | 'spec'> & {
  action: Extract<ScheduleOptions['action'], { type: 'startWorkflow' }>;
  policies: NonNullable<ScheduleOptions['policies']>;
  when: string;
  /** A hash of spec, action and policies, kept in the runs' memo: equal means nothing to update. */
  fingerprint?: string;
};

/** When a workspace's runs recur: the command's flags, each replaced by the workspace's own (its entry). */
interface Timing {
  every: string;
  fullRefreshCron: string;
  timezone: string;
}

/**
 * A workspace's incremental interval, at a phase of its own: the offset into each interval is a hash of the
 * workspace id, so a fleet's many workspaces start their runs spread over the interval instead of all at
 * its boundary (where a thousand runs opened at once make the workers' workflow caches and the server's
 * persistence the limit). The same id keeps the same phase across `schedule create`s; the `default`
 * workspace keeps the boundary, as a deployment of one workspace always had it.
 */
export function intervalOf(every: string, workspace: string): { every: number; offset?: number } {
  const everyMs = Duration.fromISO(every).as('milliseconds');
  if (workspace === DEFAULT_WORKSPACE) return { every: everyMs };
  const hash = createHash('sha256').update(workspace).digest().readUInt32BE(0);
  // Whole seconds: a phase that reads plainly in `schedule list` and the Temporal UI.
  const offset = (hash % Math.max(Math.floor(everyMs / 1000), 1)) * 1000;
  return offset > 0 ? { every: everyMs, offset } : { every: everyMs };
}

/** The schedules a workspace's configuration and timing ask for, each with the memo that fingerprints it. */
function wantedSchedules(
  config: Config,
  ids: ScheduleIds,
  timing: Timing,
  streamsOption: StreamName[] | undefined,
): Wanted[] {
  const workspace = config.SYNC_WORKSPACE;
  const all = settingsFromConfig(config, new Date());
  // The streams are fixed in the schedules (like the settings): change SYNC_STREAMS, update them.
  const streams = streamsOption ?? config.SYNC_STREAMS;
  // Queries with their own schedule are taken by it alone, not by every sync run as well (and not at
  // all when report_snapshots is left out).
  const ownSchedule = streams.includes('report_snapshots')
    ? (all.reportQueries ?? []).filter((q) => q.schedule)
    : [];
  const settings = { ...all, reportQueries: (all.reportQueries ?? []).filter((q) => !q.schedule) };
  // runId is left empty: each scheduled run takes its workflow id (unique per fire) as its run id.
  const input = (mode: SyncRunInput['mode'], s = settings, st = streams): SyncRunInput => ({
    runId: '',
    mode,
    streams: st,
    settings: s,
  });
  const policies = {
    overlap: ScheduleOverlapPolicy.SKIP,
    catchupWindow: '1 hour',
    pauseOnFailure: false,
  } as const;
  // A workspace's runs carry its `Workspace` attribute (everything they start inherits it) and its fairness
  // key beside their mode's priority, as `sync --workspace` starts them. The SDK's schedule options do not
  // declare `priority` but send it (the description reads it back).
  const startRun = (args: SyncRunInput): Wanted['action'] => {
    const start = workspaceStartOptions(workspace, args.mode);
    return {
      type: 'startWorkflow',
      workflowType: 'syncRunWorkflow',
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [args],
      ...(start.typedSearchAttributes.length > 0
        ? { typedSearchAttributes: start.typedSearchAttributes }
        : {}),
      ...{ priority: start.priority },
    };
  };
  const wanted: Wanted[] = [
    {
      scheduleId: ids.incremental,
      spec: { intervals: [intervalOf(timing.every, workspace)] },
      action: startRun(input('incremental')),
      policies,
      when: `every ${timing.every}`,
    },
    {
      scheduleId: ids.fullRefresh,
      spec: { cronExpressions: [timing.fullRefreshCron], timezone: timing.timezone },
      action: startRun(input('full_refresh')),
      policies,
      when: `${timing.fullRefreshCron} ${timing.timezone}`,
    },
    ...ownSchedule.map((query) => ({
      scheduleId: `${ids.reportPrefix}${query.name}`,
      spec: { cronExpressions: [query.schedule!.cron], timezone: query.schedule!.timezone },
      action: startRun(input('incremental', { ...all, reportQueries: [query] }, ['report_snapshots'])),
      policies,
      when: `${query.schedule!.cron} ${query.schedule!.timezone}`,
    })),
  ];
  return wanted.map((w) => {
    const fingerprint = createHash('sha256')
      .update(JSON.stringify({ spec: w.spec, action: w.action, policies: w.policies }))
      .digest('hex')
      .slice(0, 16);
    return {
      ...w,
      fingerprint,
      action: { ...w.action, memo: { [DEFINITION_MEMO]: { fingerprint, when: w.when } } },
    };
  });
}

/** One line of `schedule list`: id, when, mode, streams, state, next and last action. */
function listLine(scheduleId: string, s: OwnSchedule): string {
  const input = s.action.type === 'startWorkflow' ? (s.action.args?.[0] as Partial<SyncRunInput>) : {};
  const next = s.info.nextActionTimes[0]?.toISOString() ?? '-';
  const last = s.info.recentActions.at(-1)?.takenAt.toISOString() ?? '-';
  const state = s.state.paused ? `paused${s.state.note ? ` (${s.state.note})` : ''}` : 'active';
  return `${scheduleId}\t${s.memo.when}\t${input.mode ?? '?'}\t${(input.streams ?? []).join(',')}\t${state}\tnext ${next}\tlast ${last}\n`;
}

/**
 * The workspaces a `schedule` command acts on, each with its configuration: the one `--workspace` or
 * SYNC_WORKSPACE names, else the deployment's own and every workspace of SYNC_WORKSPACES_FILE. Throws a
 * ConfigError naming every workspace whose configuration is bad, before any schedule is touched.
 */
function scheduledWorkspaces(config: Config, named: boolean): Config[] {
  if (named || config.SYNC_WORKSPACES_FILE === undefined) return [config];
  const read = readWorkspacesFile(config.SYNC_WORKSPACES_FILE);
  if ('problems' in read) throw new ConfigError(read.problems);
  const load = workspaceConfigLoader(config);
  const configs = [config];
  const problems: string[] = [];
  for (const entry of read.file.workspaces) {
    try {
      configs.push(load(entry.id));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return configs;
}

/** A workspace's timing: its entry's `schedule`, each field it leaves out from the command's flags. */
function timingOf(config: Config, flags: Timing): Timing {
  if (config.SYNC_WORKSPACE === DEFAULT_WORKSPACE || config.SYNC_WORKSPACES_FILE === undefined) return flags;
  const read = readWorkspacesFile(config.SYNC_WORKSPACES_FILE);
  const entry = 'file' in read ? read.file.workspaces.find((w) => w.id === config.SYNC_WORKSPACE) : undefined;
  const own = entry?.schedule ?? {};
  return {
    every: own.every ?? flags.every,
    fullRefreshCron: own.fullRefreshCron ?? flags.fullRefreshCron,
    timezone: own.timezone ?? flags.timezone,
  };
}

/**
 * `schedule create|update|delete|list`: per workspace, an incremental sync every `--every`, and a full
 * refresh on a cron (catches changes to old tickets and messages that did not move `updated_at`, marks
 * deleted tickets). Overlaps are skipped: a run still going when the next is due makes the next wait for
 * the following slot. Without `--workspace`, every workspace of the deployment; schedules of workspaces
 * removed from SYNC_WORKSPACES_FILE are deleted by create, update and delete, and listed by list.
 */
export function scheduleCommand(
  action: string,
  opts: {
    config?: string;
    every: string;
    fullRefreshCron: string;
    timezone: string;
    streams?: StreamName[];
    workspace?: string;
  },
): Promise<number> {
  if (!['create', 'update', 'delete', 'list'].includes(action)) {
    process.stderr.write(
      `usage error: schedule action must be create, update, delete or list, not "${action}"\n`,
    );
    return Promise.resolve(2);
  }
  const every = Duration.fromISO(opts.every);
  if ((action === 'create' || action === 'update') && (!every.isValid || every.as('seconds') < 60)) {
    process.stderr.write(
      `usage error: --every must be an ISO 8601 duration of at least PT1M, not "${opts.every}"\n`,
    );
    return Promise.resolve(2);
  }
  const named = opts.workspace !== undefined || (process.env['SYNC_WORKSPACE'] ?? '') !== '';
  return withTemporal(opts, { embedIfUnset: false }, async ({ config, temporal }) => {
    let configs: Config[];
    try {
      configs = scheduledWorkspaces(config, named);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const problem of err.problems) process.stderr.write(`config error: ${problem}\n`);
      return 2;
    }
    const client = temporal.client;
    const deployment = deploymentNameOf(config);
    const taskQueue = config.TEMPORAL_TASK_QUEUE;
    try {
      const listed = await idsOfDeployment(client, deployment);
      const removed = named
        ? new Map<string, string>()
        : await schedulesOfRemovedWorkspaces(
            client,
            deployment,
            taskQueue,
            configs.map((c) => c.SYNC_WORKSPACE),
            listed,
          );
      const existing = new Map<string, Map<string, OwnSchedule>>();
      for (const c of configs)
        existing.set(
          c.SYNC_WORKSPACE,
          await existingSchedules(client, scheduleIdsFor(c), taskQueue, c.SYNC_WORKSPACE, listed),
        );
      if (action === 'list') {
        let lines = 0;
        for (const found of existing.values())
          for (const [scheduleId, s] of found) {
            process.stdout.write(listLine(scheduleId, s));
            lines++;
          }
        for (const [scheduleId, workspace] of removed)
          process.stderr.write(
            `${scheduleId}: of workspace "${workspace}", no longer in SYNC_WORKSPACES_FILE (\`schedule update\` deletes it)\n`,
          );
        if (lines === 0)
          process.stderr.write(
            `no schedules of this deployment (ids ${scheduleIdsFor(configs[0]!).incremental}, …): run \`schedule create\`\n`,
          );
        return 0;
      }
      if (action === 'delete') {
        const ids = [...[...existing.values()].flatMap((found) => [...found.keys()]), ...removed.keys()];
        for (const scheduleId of ids) await client.schedule.getHandle(scheduleId).delete();
        process.stderr.write(`schedules deleted: ${ids.join(', ') || 'none of this deployment existed'}\n`);
        return 0;
      }
      // create and update are one: what is missing is created, what differs is updated in place (its
      // pause, note and recent runs stay), what is as asked is left alone.
      const lines: string[] = [];
      for (const c of configs) {
        const own = existing.get(c.SYNC_WORKSPACE)!;
        const wanted = wantedSchedules(c, scheduleIdsFor(c), timingOf(c, opts), opts.streams);
        for (const w of wanted) {
          const before = own.get(w.scheduleId);
          const { when, fingerprint, ...options } = w;
          if (!before) {
            await client.schedule.create(options);
            lines.push(`${w.scheduleId} (${when}) created`);
          } else if (before.memo.fingerprint === fingerprint) {
            lines.push(`${w.scheduleId} (${when}) unchanged`);
          } else {
            await client.schedule
              .getHandle(w.scheduleId)
              .update((previous) => ({ ...previous, spec: w.spec, action: w.action, policies: w.policies }));
            lines.push(`${w.scheduleId} (${when}) updated`);
          }
        }
        // A report query that lost its own schedule (or was removed): its schedule goes.
        for (const scheduleId of own.keys()) {
          if (wanted.some((w) => w.scheduleId === scheduleId)) continue;
          await client.schedule.getHandle(scheduleId).delete();
          lines.push(`${scheduleId} deleted (no longer configured)`);
        }
        const streams = opts.streams ?? c.SYNC_STREAMS;
        if (streams.length < ALL_STREAMS.length)
          process.stderr.write(
            `scheduled streams${c.SYNC_WORKSPACE === DEFAULT_WORKSPACE ? '' : ` of ${c.SYNC_WORKSPACE}`}: ${streams.join(',')}\n`,
          );
      }
      for (const [scheduleId, workspace] of removed) {
        await client.schedule.getHandle(scheduleId).delete();
        lines.push(`${scheduleId} deleted (workspace "${workspace}" no longer in SYNC_WORKSPACES_FILE)`);
      }
      process.stderr.write(`schedules: ${lines.join(', ')}\n`);
      return 0;
    } catch (err) {
      return reportFailure(err);
    }
  });
}
