import { type Client, ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import { Duration } from 'luxon';
import { ALL_STREAMS, type StreamName, type SyncRunInput } from '../../schemas/sync.js';
import { settingsFromConfig } from '../../worker/config.js';
import { reportFailure, withTemporal } from './context.js';

export const INCREMENTAL_SCHEDULE_ID = 'support-sync-incremental';
export const FULL_REFRESH_SCHEDULE_ID = 'support-sync-full-refresh';
/** One schedule per saved report query that carries its own `schedule` (REPORT_QUERIES). */
export const REPORT_SCHEDULE_PREFIX = 'support-sync-report-';

/** The schedules this command manages that exist now (the report ones found by prefix). */
async function existingScheduleIds(client: Client): Promise<string[]> {
  const ids = [INCREMENTAL_SCHEDULE_ID, FULL_REFRESH_SCHEDULE_ID];
  for await (const s of client.schedule.list())
    if (s.scheduleId.startsWith(REPORT_SCHEDULE_PREFIX)) ids.push(s.scheduleId);
  return ids;
}

/**
 * The recurring schedules whose runs read other streams than `streams` (a worker's SYNC_STREAMS): a
 * schedule's streams are fixed when it is created, so a changed SYNC_STREAMS needs `schedule create` again.
 * Schedules that do not exist, or cannot be read, are not reported.
 */
export async function schedulesReadingOtherStreams(
  client: Client,
  streams: readonly StreamName[],
): Promise<{ scheduleId: string; streams: string[] }[]> {
  const differing: { scheduleId: string; streams: string[] }[] = [];
  for (const scheduleId of [INCREMENTAL_SCHEDULE_ID, FULL_REFRESH_SCHEDULE_ID]) {
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
  if (action !== 'create' && action !== 'delete') {
    process.stderr.write(`usage error: schedule action must be create or delete, not "${action}"\n`);
    return Promise.resolve(2);
  }
  const every = Duration.fromISO(opts.every);
  if (action === 'create' && (!every.isValid || every.as('seconds') < 60)) {
    process.stderr.write(
      `usage error: --every must be an ISO 8601 duration of at least PT1M, not "${opts.every}"\n`,
    );
    return Promise.resolve(2);
  }
  return withTemporal(opts, { embedIfUnset: false }, async ({ config, temporal }) => {
    try {
      for (const id of await existingScheduleIds(temporal.client)) {
        try {
          await temporal.client.schedule.getHandle(id).delete();
        } catch (err) {
          if (!(err instanceof ScheduleNotFoundError)) throw err;
        }
      }
      if (action === 'delete') {
        process.stderr.write('schedules deleted\n');
        return 0;
      }
      const all = settingsFromConfig(config, new Date());
      // The streams are fixed in the schedules (like the settings): change SYNC_STREAMS, create them again.
      const streams = opts.streams ?? config.SYNC_STREAMS;
      // Queries with their own schedule are taken by it alone, not by every sync run as well (and not at
      // all when report_snapshots is left out).
      const ownSchedule = streams.includes('report_snapshots')
        ? (all.reportQueries ?? []).filter((q) => q.schedule)
        : [];
      const settings = { ...all, reportQueries: (all.reportQueries ?? []).filter((q) => !q.schedule) };
      // runId is left empty: each scheduled run takes its workflow id (unique per fire) as its run id.
      const input = (mode: SyncRunInput['mode']): SyncRunInput => ({
        runId: '',
        mode,
        streams,
        settings,
      });
      const common = {
        policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour', pauseOnFailure: false },
      } as const;
      await temporal.client.schedule.create({
        scheduleId: INCREMENTAL_SCHEDULE_ID,
        spec: { intervals: [{ every: every.as('milliseconds') }] },
        action: {
          type: 'startWorkflow',
          workflowType: 'syncRunWorkflow',
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          args: [input('incremental')],
        },
        ...common,
      });
      await temporal.client.schedule.create({
        scheduleId: FULL_REFRESH_SCHEDULE_ID,
        spec: { cronExpressions: [opts.fullRefreshCron], timezone: opts.timezone },
        action: {
          type: 'startWorkflow',
          workflowType: 'syncRunWorkflow',
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          args: [input('full_refresh')],
        },
        ...common,
      });
      const reportSchedules: string[] = [];
      for (const query of ownSchedule) {
        const scheduleId = `${REPORT_SCHEDULE_PREFIX}${query.name}`;
        await temporal.client.schedule.create({
          scheduleId,
          spec: { cronExpressions: [query.schedule!.cron], timezone: query.schedule!.timezone },
          action: {
            type: 'startWorkflow',
            workflowType: 'syncRunWorkflow',
            taskQueue: config.TEMPORAL_TASK_QUEUE,
            args: [
              {
                runId: '',
                mode: 'incremental',
                streams: ['report_snapshots'],
                settings: { ...all, reportQueries: [query] },
              } satisfies SyncRunInput,
            ],
          },
          ...common,
        });
        reportSchedules.push(`${scheduleId} (${query.schedule!.cron} ${query.schedule!.timezone})`);
      }
      if (streams.length < ALL_STREAMS.length)
        process.stderr.write(`scheduled streams: ${streams.join(',')}\n`);
      process.stderr.write(
        `schedules created: ${INCREMENTAL_SCHEDULE_ID} (every ${opts.every}), ${FULL_REFRESH_SCHEDULE_ID} (${opts.fullRefreshCron} ${opts.timezone})${reportSchedules.map((r) => `, ${r}`).join('')}\n`,
      );
      return 0;
    } catch (err) {
      return reportFailure(err);
    }
  });
}
