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
import { settingsFromConfig } from '../../worker/config.js';
import { deploymentNameOf } from '../../worker/deployment-version.js';
import { reportFailure, withTemporal } from './context.js';

/** The ids of one deployment's schedules. */
export interface ScheduleIds {
  incremental: string;
  fullRefresh: string;
  /** One schedule per saved report query that carries its own `schedule` (REPORT_QUERIES): prefix + name. */
  reportPrefix: string;
}

/**
 * A deployment's schedule ids, prefixed by its name (TEMPORAL_DEPLOYMENT_NAME, default the task queue): the
 * default deployment (`support-sync`) keeps the ids it always had (`support-sync-incremental`, …), and a
 * second deployment in the namespace has its own. A deployment that serves several workspaces adds the
 * workspace to the scope (`<deployment>-<workspace>-incremental`).
 */
export function scheduleIdsOf(scope: { deployment: string; workspace?: string }): ScheduleIds {
  const prefix = scope.workspace ? `${scope.deployment}-${scope.workspace}` : scope.deployment;
  return {
    incremental: `${prefix}-incremental`,
    fullRefresh: `${prefix}-full-refresh`,
    reportPrefix: `${prefix}-report-`,
  };
}

export function scheduleIdsFor(config: Config): ScheduleIds {
  return scheduleIdsOf({ deployment: deploymentNameOf(config) });
}

/** The memo key, on the runs a schedule starts, of what `schedule create` made it from. */
const DEFINITION_MEMO = 'supportSyncSchedule';

interface ScheduleDefinition {
  /** `fingerprint`: a hash of spec, action and policies; `when`: the spec as the command took it. */
  memo: { fingerprint: string; when: string };
}

/**
 * The schedule as this deployment has it (null: none), or an error when the id is taken by a schedule that
 * starts runs on another task queue (another deployment with the same TEMPORAL_DEPLOYMENT_NAME).
 */
async function ownSchedule(
  client: Client,
  scheduleId: string,
  taskQueue: string,
): Promise<(ScheduleDescription & ScheduleDefinition) | null> {
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
  const memo = (action.memo?.[DEFINITION_MEMO] ?? {}) as Partial<ScheduleDefinition['memo']>;
  return Object.assign(described, {
    memo: { fingerprint: memo.fingerprint ?? '', when: memo.when ?? '(not made by schedule create)' },
  });
}

/** This deployment's schedules that exist now (the report ones found by prefix and task queue). */
async function existingSchedules(
  client: Client,
  ids: ScheduleIds,
  taskQueue: string,
): Promise<Map<string, ScheduleDescription & ScheduleDefinition>> {
  const found = new Map<string, ScheduleDescription & ScheduleDefinition>();
  const candidates = [ids.incremental, ids.fullRefresh];
  for await (const s of client.schedule.list())
    if (s.scheduleId.startsWith(ids.reportPrefix)) candidates.push(s.scheduleId);
  for (const scheduleId of candidates) {
    const deploymentSchedule = await ownSchedule(client, scheduleId, taskQueue).catch((err: unknown) => {
      // A report-prefixed schedule of another deployment (whose name extends this one's) is not ours.
      if (scheduleId.startsWith(ids.reportPrefix)) return null;
      throw err;
    });
    if (deploymentSchedule) found.set(scheduleId, deploymentSchedule);
  }
  return found;
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

/** The schedules the configuration and the options ask for, each with the memo that fingerprints it. */
function wantedSchedules(
  config: Config,
  ids: ScheduleIds,
  opts: { every: string; fullRefreshCron: string; timezone: string; streams?: StreamName[] },
): Wanted[] {
  const all = settingsFromConfig(config, new Date());
  // The streams are fixed in the schedules (like the settings): change SYNC_STREAMS, update them.
  const streams = opts.streams ?? config.SYNC_STREAMS;
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
  const startRun = (args: SyncRunInput) =>
    ({
      type: 'startWorkflow',
      workflowType: 'syncRunWorkflow',
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      args: [args],
    }) as const;
  const wanted: Wanted[] = [
    {
      scheduleId: ids.incremental,
      spec: { intervals: [{ every: Duration.fromISO(opts.every).as('milliseconds') }] },
      action: startRun(input('incremental')),
      policies,
      when: `every ${opts.every}`,
    },
    {
      scheduleId: ids.fullRefresh,
      spec: { cronExpressions: [opts.fullRefreshCron], timezone: opts.timezone },
      action: startRun(input('full_refresh')),
      policies,
      when: `${opts.fullRefreshCron} ${opts.timezone}`,
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

/** `schedule list`: this deployment's schedules, one line each, on stdout. */
async function listSchedules(client: Client, ids: ScheduleIds, taskQueue: string): Promise<number> {
  const found = await existingSchedules(client, ids, taskQueue);
  if (found.size === 0) {
    process.stderr.write(
      `no schedules of this deployment (ids ${ids.incremental}, …): run \`schedule create\`\n`,
    );
    return 0;
  }
  for (const [scheduleId, s] of found) {
    const input = s.action.type === 'startWorkflow' ? (s.action.args?.[0] as Partial<SyncRunInput>) : {};
    const next = s.info.nextActionTimes[0]?.toISOString() ?? '-';
    const last = s.info.recentActions.at(-1)?.takenAt.toISOString() ?? '-';
    const state = s.state.paused ? `paused${s.state.note ? ` (${s.state.note})` : ''}` : 'active';
    process.stdout.write(
      `${scheduleId}\t${s.memo.when}\t${input.mode ?? '?'}\t${(input.streams ?? []).join(',')}\t${state}\tnext ${next}\tlast ${last}\n`,
    );
  }
  return 0;
}

/**
 * `schedule create|delete`: an incremental sync every `--every`, and a full refresh on a cron (catches
 * changes to old tickets and messages that did not move `updated_at`, marks deleted tickets). Overlaps are
 * skipped: a run still going when the next is due makes the next wait for the following slot.
 */
export function scheduleCommand(
  action: string,
  opts: {
    config?: string;
    every: string;
    fullRefreshCron: string;
    timezone: string;
    streams?: StreamName[];
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
  return withTemporal(opts, { embedIfUnset: false }, async ({ config, temporal }) => {
    const client = temporal.client;
    const ids = scheduleIdsFor(config);
    const taskQueue = config.TEMPORAL_TASK_QUEUE;
    try {
      if (action === 'list') return await listSchedules(client, ids, taskQueue);
      const existing = await existingSchedules(client, ids, taskQueue);
      if (action === 'delete') {
        for (const scheduleId of existing.keys()) await client.schedule.getHandle(scheduleId).delete();
        process.stderr.write(
          `schedules deleted: ${[...existing.keys()].join(', ') || 'none of this deployment existed'}\n`,
        );
        return 0;
      }
      // create and update are one: what is missing is created, what differs is updated in place (its
      // pause, note and recent runs stay), what is as asked is left alone.
      const wanted = wantedSchedules(config, ids, opts);
      const lines: string[] = [];
      for (const w of wanted) {
        const before = existing.get(w.scheduleId);
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
      for (const scheduleId of existing.keys()) {
        if (wanted.some((w) => w.scheduleId === scheduleId)) continue;
        await client.schedule.getHandle(scheduleId).delete();
        lines.push(`${scheduleId} deleted (no longer configured)`);
      }
      const streams = opts.streams ?? config.SYNC_STREAMS;
      if (streams.length < ALL_STREAMS.length)
        process.stderr.write(`scheduled streams: ${streams.join(',')}\n`);
      process.stderr.write(`schedules: ${lines.join(', ')}\n`);
      return 0;
    } catch (err) {
      return reportFailure(err);
    }
  });
}
