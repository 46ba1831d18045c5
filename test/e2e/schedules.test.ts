import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TypedSearchAttributes } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intervalOf, scheduleIdsOf } from '../../cli/commands/schedule.js';
import type { SyncRunInput } from '../../schemas/run-input.js';
import { WorkspaceKey } from '../../workflows/search-attributes.js';
import { cli } from '../support/cli.js';
import { connectToTestServer, testTemporalAddress } from '../support/temporal.js';

/**
 * `schedule create|update|list|delete` against the dev server, as an operator runs it (its own process):
 * a second create changes nothing, a changed option updates the schedule in place (its pause and note
 * stay), and two deployments in one namespace keep their own schedules.
 */
describe('schedules: updated in place, one set per deployment', () => {
  let env: TestWorkflowEnvironment;
  const suffix = randomBytes(3).toString('hex');
  const first = { queue: `sched-first-${suffix}` };
  const second = { queue: `sched-second-${suffix}` };
  const envOf = (taskQueue: string, extra: Record<string, string> = {}) => ({
    PATH: process.env['PATH'] ?? '',
    SUPPORT_API_URL: 'https://source.invalid',
    SUPPORT_API_KEY: 'not-used-here',
    DESTINATION_URL: 'postgres://u:p@127.0.0.1:1/db',
    TEMPORAL_ADDRESS: testTemporalAddress(),
    TEMPORAL_TASK_QUEUE: taskQueue,
    LOG_LEVEL: 'silent',
    ...extra,
  });
  const schedule = (taskQueue: string, args: string[], extra: Record<string, string> = {}) =>
    cli(['schedule', ...args], envOf(taskQueue, extra));
  const ids = (queue: string) => scheduleIdsOf({ deployment: queue });
  const allIds = async () => {
    const found: string[] = [];
    for await (const s of env.client.schedule.list()) found.push(s.scheduleId);
    return found;
  };

  beforeAll(async () => {
    env = await connectToTestServer();
  });
  afterAll(async () => {
    await env?.teardown();
  });

  it('create twice changes nothing the second time; a changed option is updated in place', async () => {
    const created = await schedule(first.queue, ['create', '--every', 'PT1H']);
    expect(created, created.stderr).toMatchObject({ code: 0 });
    expect(created.stderr).toContain(`${ids(first.queue).incremental} (every PT1H) created`);
    const handle = env.client.schedule.getHandle(ids(first.queue).incremental);
    const before = await handle.describe();

    const again = await schedule(first.queue, ['create', '--every', 'PT1H']);
    expect(again, again.stderr).toMatchObject({ code: 0 });
    expect(again.stderr).toContain(`${ids(first.queue).incremental} (every PT1H) unchanged`);
    expect(again.stderr).toContain(`${ids(first.queue).fullRefresh} (0 3 * * * UTC) unchanged`);
    expect(again.stderr).not.toMatch(/created|updated/);
    const after = await handle.describe();
    expect(after.raw.conflictToken).toEqual(before.raw.conflictToken);
    expect(after.info.createdAt).toEqual(before.info.createdAt);

    // An operator's pause, then a changed interval: updated in place, paused with its note still.
    await handle.pause('paused for the warehouse migration');
    const updated = await schedule(first.queue, ['update', '--every', 'PT2H']);
    expect(updated, updated.stderr).toMatchObject({ code: 0 });
    expect(updated.stderr).toContain(`${ids(first.queue).incremental} (every PT2H) updated`);
    const changed = await handle.describe();
    expect(changed.info.createdAt).toEqual(before.info.createdAt);
    expect(changed.spec.intervals?.[0]?.every).toBe(2 * 60 * 60 * 1000);
    expect(changed.state.paused).toBe(true);
    expect(changed.state.note).toBe('paused for the warehouse migration');
  });

  it('two deployments in one namespace keep their own schedules', async () => {
    const secondCreated = await schedule(second.queue, ['create']);
    expect(secondCreated, secondCreated.stderr).toMatchObject({ code: 0 });
    let present = await allIds();
    for (const id of [ids(first.queue).incremental, ids(first.queue).fullRefresh])
      expect(present, `${id} survives the second deployment's create`).toContain(id);
    expect(present).toContain(ids(second.queue).incremental);
    // The first deployment's schedule still starts runs on its own task queue.
    const firstAction = (await env.client.schedule.getHandle(ids(first.queue).incremental).describe()).action;
    expect(firstAction.type === 'startWorkflow' && firstAction.taskQueue).toBe(first.queue);

    const listed = await schedule(first.queue, ['list']);
    expect(listed, listed.stderr).toMatchObject({ code: 0 });
    const lines = listed.stdout.trim().split('\n');
    expect(lines.map((l) => l.split('\t')[0]).sort()).toEqual(
      [ids(first.queue).fullRefresh, ids(first.queue).incremental].sort(),
    );
    expect(lines.find((l) => l.startsWith(ids(first.queue).incremental))).toMatch(
      /\tevery PT2H\tincremental\t.*\tpaused \(paused for the warehouse migration\)\t/,
    );

    // A third deployment given the first one's name, on another task queue, is refused, not merged.
    const clash = await schedule(`sched-third-${suffix}`, ['create'], {
      TEMPORAL_DEPLOYMENT_NAME: first.queue,
    });
    expect(clash.code).toBe(1);
    expect(clash.stderr).toContain(`starts runs on task queue ${first.queue}, not sched-third-${suffix}`);

    const deleted = await schedule(second.queue, ['delete']);
    expect(deleted, deleted.stderr).toMatchObject({ code: 0 });
    present = await allIds();
    expect(present).not.toContain(ids(second.queue).incremental);
    expect(present).not.toContain(ids(second.queue).fullRefresh);
    expect(present).toContain(ids(first.queue).incremental);
    expect(present).toContain(ids(first.queue).fullRefresh);
  });

  it('one set per workspace: each with its Workspace and fairness key, its own timing, removed with its entry', async () => {
    const queue = `sched-ws-${suffix}`;
    const folder = mkdtempSync(join(tmpdir(), 'schedule-workspaces-'));
    const file = join(folder, 'workspaces.yaml');
    const entries = (ids: string[]) =>
      [
        'workspaces:',
        ...ids.flatMap((id) => [
          `  - id: ${id}`,
          '    url: https://source.invalid',
          '    key: { env: WS_KEY }',
          ...(id === 'north' ? ['    schedule: { every: PT30M, timezone: Europe/Berlin }'] : []),
        ]),
      ].join('\n');
    writeFileSync(file, entries(['north', 'south']));
    const extra = { SYNC_WORKSPACES_FILE: file, WS_KEY: 'not-used-here' };
    const of = (workspace?: string) =>
      scheduleIdsOf({ deployment: queue, ...(workspace ? { workspace } : {}) });

    const created = await schedule(queue, ['create', '--every', 'PT1H'], extra);
    expect(created, created.stderr).toMatchObject({ code: 0 });
    expect(created.stderr).toContain(`${of().incremental} (every PT1H) created`);
    expect(created.stderr).toContain(`${of('north').incremental} (every PT30M) created`);
    expect(created.stderr).toContain(`${of('north').fullRefresh} (0 3 * * * Europe/Berlin) created`);
    expect(created.stderr).toContain(`${of('south').incremental} (every PT1H) created`);

    const north = await env.client.schedule.getHandle(of('north').incremental).describe();
    expect(north.action.type).toBe('startWorkflow');
    if (north.action.type !== 'startWorkflow') return;
    expect((north.action.typedSearchAttributes as TypedSearchAttributes | undefined)?.get(WorkspaceKey)).toBe(
      'north',
    );
    expect(north.action.priority).toMatchObject({ fairnessKey: 'north', priorityKey: 1 });
    expect(((north.action.args ?? [])[0] as SyncRunInput).mode).toBe('incremental');
    // Each workspace at its own phase of the interval, as the server keeps it; the default one at the boundary.
    expect(north.spec.intervals?.[0]).toMatchObject({
      every: 30 * 60 * 1000,
      offset: intervalOf('PT30M', 'north').offset,
    });
    const home = await env.client.schedule.getHandle(of().incremental).describe();
    expect(home.spec.intervals?.[0]?.offset ?? 0).toBe(0);
    expect(
      home.action.type === 'startWorkflow' &&
        (home.action.typedSearchAttributes as TypedSearchAttributes | undefined)?.get(WorkspaceKey),
    ).toBe(undefined);

    // A run the schedule starts is the workspace's: found by its Workspace (no worker runs it here).
    await env.client.schedule.getHandle(of('north').incremental).trigger();
    let started: string | undefined;
    for (let i = 0; i < 50 && !started; i++) {
      for await (const w of env.client.workflow.list({
        query: `${WorkspaceKey.name} = 'north' AND TaskQueue = '${queue}'`,
      }))
        started = w.workflowId;
      if (!started) await new Promise((r) => setTimeout(r, 200));
    }
    expect(started, 'the triggered run is listed under Workspace = north').toBeDefined();
    await env.client.workflow.getHandle(started!).terminate('test: no worker serves this queue');

    // One workspace alone, then the file without south: update deletes south's schedules, no one else's.
    const listed = await schedule(queue, ['list', '--workspace', 'south'], extra);
    expect(listed, listed.stderr).toMatchObject({ code: 0 });
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((l) => l.split('\t')[0])
        .sort(),
    ).toEqual([of('south').fullRefresh, of('south').incremental].sort());
    writeFileSync(file, entries(['north']));
    const updated = await schedule(queue, ['update', '--every', 'PT1H'], extra);
    expect(updated, updated.stderr).toMatchObject({ code: 0 });
    expect(updated.stderr).toContain(
      `${of('south').incremental} deleted (workspace "south" no longer in SYNC_WORKSPACES_FILE)`,
    );
    expect(updated.stderr).toContain(`${of('north').incremental} (every PT30M) unchanged`);
    const present = await allIds();
    expect(present).not.toContain(of('south').incremental);
    expect(present).toContain(of('north').incremental);
    expect(present).toContain(of().incremental);

    // A bad entry is named, and nothing is touched.
    writeFileSync(file, entries(['north']).replace('every: PT30M', 'every: PT10S'));
    const bad = await schedule(queue, ['update'], extra);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      'entry 1 ("north"): schedule.every: must be an ISO 8601 duration of at least PT1M',
    );
    writeFileSync(file, entries(['north']));
    const deleted = await schedule(queue, ['delete'], extra);
    expect(deleted, deleted.stderr).toMatchObject({ code: 0 });
    const after = await allIds();
    for (const id of [of().incremental, of('north').incremental, of('north').fullRefresh])
      expect(after).not.toContain(id);
  });
});
