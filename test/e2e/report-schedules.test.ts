import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { scheduleIdsOf } from '../../cli/commands/schedule.js';
import { EXAMPLE_REPORT_QUERIES } from '../../cli/display/bi-summary.js';
import type { SyncRunInput } from '../../schemas/run-input.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';

/**
 * `schedule create` with REPORT_QUERIES: a query with its own `schedule` gets a Temporal schedule of its own
 * that runs only its snapshot, and is left out of the every-run snapshots of the incremental schedule.
 */
const {
  incremental: INCREMENTAL_SCHEDULE_ID,
  fullRefresh: FULL_REFRESH_SCHEDULE_ID,
  reportPrefix: REPORT_SCHEDULE_PREFIX,
} = scheduleIdsOf({ deployment: 'schedule-test' });

describe('schedule create: report queries with their own schedule', () => {
  let env: TestWorkflowEnvironment | undefined;
  afterAll(async () => {
    await env?.teardown();
  });

  it('creates one schedule per scheduled query (cron + timezone, report_snapshots only) and deletes them', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'schedule-'));
    const config = join(dir, 'settings.yaml');
    writeFileSync(
      config,
      [
        'SUPPORT_API_URL: https://source.invalid',
        'SUPPORT_API_KEY: not-used-here',
        'DESTINATION_URL: postgres://u:p@127.0.0.1:1/db',
        `TEMPORAL_ADDRESS: ${testTemporalAddress()}`,
        'TEMPORAL_TASK_QUEUE: schedule-test',
        `REPORT_QUERIES: ${EXAMPLE_REPORT_QUERIES}`,
        'LOG_LEVEL: silent',
      ].join('\n'),
    );
    // The CLI in its own process (as an operator runs it).
    const schedule = (action: string) => {
      const r = spawnSync(
        process.execPath,
        ['--import', 'tsx', 'cli/main.ts', 'schedule', action, '--config', config, '--every', 'PT1H'],
        { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' }, timeout: 60_000 },
      );
      return { code: r.status, stderr: r.stderr };
    };
    const created = schedule('create');
    expect(created, created.stderr).toMatchObject({ code: 0 });
    expect(created.stderr).toContain(`${REPORT_SCHEDULE_PREFIX}backlog-now (0 * * * * UTC) created`);

    env = await connectToTestServer();
    const report = await env.client.schedule.getHandle(`${REPORT_SCHEDULE_PREFIX}backlog-now`).describe();
    // Temporal stores the cron "0 * * * *" as a calendar: minute 0 of every hour.
    expect(report.spec.calendars?.[0]?.minute).toEqual([{ start: 0, end: 0, step: 1 }]);
    expect(report.spec.timezone).toBe('UTC');
    const action = report.action as { workflowType: string; args: SyncRunInput[] };
    expect(action.workflowType).toBe('syncRunWorkflow');
    expect(action.args[0]?.streams).toEqual(['report_snapshots']);
    expect(action.args[0]?.settings.reportQueries?.map((q) => q.name)).toEqual(['backlog-now']);

    const incremental = await env.client.schedule.getHandle(INCREMENTAL_SCHEDULE_ID).describe();
    const every = (incremental.action as { args: SyncRunInput[] }).args[0]!;
    expect(every.settings.reportQueries?.map((q) => q.name)).toEqual([
      'new-tickets-this-month',
      'daily-new-and-resolved',
      'channels-last-month',
    ]);

    expect(schedule('delete').code).toBe(0);
    const left: string[] = [];
    for await (const s of env.client.schedule.list()) left.push(s.scheduleId);
    expect(left).not.toContain(`${REPORT_SCHEDULE_PREFIX}backlog-now`);
    expect(left).not.toContain(INCREMENTAL_SCHEDULE_ID);
    expect(left).not.toContain(FULL_REFRESH_SCHEDULE_ID);
  });
});
