import { fileURLToPath } from 'node:url';
import type { Client, WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Activities } from '../../activities/index.js';
import { keyFingerprint } from '../../connectors/support-api/index.js';
import { Secret } from '../../schemas/secret.js';
import type { RunSummary } from '../../worker/run-sync.js';
import { pacingOf, type RunningWorkers, startWorkers } from '../../worker/workers.js';
import { bundleWorkflows } from '../../worker/workflow-bundle.js';
import { fleetBudgetWorkflowId } from '../../workflows/fleet-budget-api.js';
import { type Pipeline, startPipeline, workflowBundle } from './harness.js';

const { EventType, VersioningBehavior } = proto.temporal.api.enums.v1;
const BUILD_B_WORKFLOWS = fileURLToPath(new URL('./versioning/build-b-workflows.ts', import.meta.url));

/** The build ids of the workers that completed each workflow task of a workflow. */
async function taskBuilds(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
    .map((e) => e.workflowTaskCompletedEventAttributes?.deploymentVersion?.buildId ?? '(unversioned)');
}

/** The commands' event types of a workflow, in order (what tells build A's sync run from build B's). */
async function eventTypes(handle: WorkflowHandle): Promise<number[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).map((e) => e.eventType ?? 0);
}

/** The child workflows a workflow started (ids). */
async function childIds(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.eventType === EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED)
    .map((e) => e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId ?? '');
}

async function eventually<T>(what: string, read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)} after 60 s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * A deploy never breaks a running sync: a run started on build A keeps running on A (its workflow tasks,
 * its children's, its activities) while build B — whose sync run issues other commands, without a patch —
 * is deployed and takes every new run; once A's run is closed, A is drained. Without Worker Versioning,
 * A's run would continue on B's code and fail its replay (a timer where its history has an activity).
 */
describe('Worker Versioning: a run finishes on the build that started it', () => {
  let p: Pipeline;
  let client: Client;
  const workers: RunningWorkers[] = [];

  beforeAll(async () => {
    p = await startPipeline('versioning', { workers: false });
    client = p.env.client;
  });
  afterAll(async () => {
    for (const w of workers) await w.shutdown();
    await p?.close();
  });

  it('a run on build A finishes on A, new runs start on B, A drains; no patch', async () => {
    const deploymentName = p.taskQueue;
    const service = client.workflowService;
    const describeDeployment = () =>
      service.describeWorkerDeployment({ namespace: 'default', deploymentName });
    const currentBuild = async () =>
      (await describeDeployment()).workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
    const drainage = async (buildId: string) =>
      (
        await service.describeWorkerDeploymentVersion({
          namespace: 'default',
          deploymentVersion: { deploymentName, buildId },
        })
      ).workerDeploymentVersionInfo?.drainageInfo?.status ?? 0;

    // Build A's list pages wait at a gate: its run stays open while B is deployed.
    let reachedGate!: () => void;
    const atGate = new Promise<void>((resolve) => (reachedGate = resolve));
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    const real = p.deps.activities;
    const gatedActivities: Activities = {
      ...real,
      async syncTicketsPages(...args: Parameters<Activities['syncTicketsPages']>) {
        reachedGate();
        await gate;
        return real.syncTicketsPages(...args);
      },
    };
    const common = {
      connection: p.env.nativeConnection,
      namespace: 'default',
      taskQueue: p.taskQueue,
      ...pacingOf(p.config),
      shutdownGraceTime: '5 seconds',
    };
    workers.push(
      await startWorkers({
        ...common,
        activities: gatedActivities,
        workflowBundle: await workflowBundle(),
        versioning: { version: { deploymentName, buildId: 'build-a' }, promotion: 'when-new' },
      }),
    );
    expect(await currentBuild()).toBe('build-a');

    const firstRun: Promise<RunSummary> = p.run('incremental');
    await atGate;

    workers.push(
      await startWorkers({
        ...common,
        activities: real,
        workflowBundle: { code: await bundleWorkflows(BUILD_B_WORKFLOWS) },
        versioning: { version: { deploymentName, buildId: 'build-b' }, promotion: 'when-new' },
      }),
    );
    expect(await currentBuild()).toBe('build-b');

    // A new run starts on B (its mark: a timer before the first activity) and finishes there.
    const secondRun = await p.run('incremental', {}, ['tags']);
    expect(secondRun.status).toBe('succeeded');
    const second = client.workflow.getHandle(secondRun.workflow_id);
    expect(new Set(await taskBuilds(second))).toEqual(new Set(['build-b']));
    expect(await eventTypes(second)).toContain(EventType.EVENT_TYPE_TIMER_STARTED);

    // A's run is still open, on A, and A is draining, not drained.
    expect(await drainage('build-a')).not.toBe(
      proto.temporal.api.enums.v1.VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED,
    );
    openGate();
    const first = await firstRun;
    expect(first.status).toBe('succeeded');
    const firstHandle = client.workflow.getHandle(first.workflow_id);
    expect(new Set(await taskBuilds(firstHandle))).toEqual(new Set(['build-a']));
    expect(await eventTypes(firstHandle)).not.toContain(EventType.EVENT_TYPE_TIMER_STARTED);
    const described = await firstHandle.describe();
    expect(described.raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(
      VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
    );
    // Its children (the lanes) were pinned to A as well.
    const children = await childIds(firstHandle);
    expect(children.length).toBeGreaterThan(0);
    for (const id of children) {
      expect(new Set(await taskBuilds(client.workflow.getHandle(id))), id).toEqual(new Set(['build-a']));
    }

    // No open run is left on A: the server reports it drained (its workers could now be stopped).
    await eventually(
      'build A drainage',
      () => drainage('build-a'),
      (s) => s === proto.temporal.api.enums.v1.VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED,
    );
    expect(await currentBuild()).toBe('build-b');
  });
});

/**
 * The key's budget workflow lives across runs and builds: pinned like every workflow, it continues as new
 * onto the build that became current at its next message, instead of keeping build A's workers needed.
 */
describe('Worker Versioning: the fleet budget moves to the new build at continue-as-new', () => {
  let p: Pipeline;
  const workers: RunningWorkers[] = [];

  beforeAll(async () => {
    p = await startPipeline('versioning_budget', {
      workers: false,
      companion: { rateLimits: true, rateLimitWindowMs: 2000 },
      env: {
        SUPPORT_API_RATE_LIMITS: 'list=50,detail=50,analytics=50,directory=50',
        SUPPORT_API_RATE_WINDOW: 'PT2S',
      },
    });
  });
  afterAll(async () => {
    for (const w of workers) await w.shutdown();
    await p?.close();
  });

  it('its run on build A continues as new on build B once B is current', async () => {
    const deploymentName = p.taskQueue;
    const client = p.env.client;
    const pacing = pacingOf(p.config);
    expect(pacing.fleetBudget).not.toBeNull();
    const start = async (
      buildId: string,
      workflowBundle: Parameters<typeof startWorkers>[0]['workflowBundle'],
    ) =>
      workers.push(
        await startWorkers({
          connection: p.env.nativeConnection,
          namespace: 'default',
          taskQueue: p.taskQueue,
          activities: p.deps.activities,
          workflowBundle,
          ...pacing,
          versioning: { version: { deploymentName, buildId }, promotion: 'when-new' },
          shutdownGraceTime: '5 seconds',
        }),
      );
    await start('build-a', await workflowBundle());
    expect((await p.run('incremental', {}, ['tags'])).status).toBe('succeeded');
    const budget = client.workflow.getHandle(
      fleetBudgetWorkflowId(p.taskQueue, keyFingerprint(new Secret(p.config.SUPPORT_API_KEY.reveal()))),
    );
    const onA = await budget.describe();
    expect(onA.status.name).toBe('RUNNING');
    expect(new Set(await taskBuilds(budget))).toEqual(new Set(['build-a']));

    await start('build-b', { code: await bundleWorkflows(BUILD_B_WORKFLOWS) });
    expect((await p.run('incremental', {}, ['tags'])).status).toBe('succeeded');
    const onB = await eventually(
      'the budget workflow run',
      () => budget.describe(),
      (d) => d.runId !== onA.runId,
    );
    expect(onB.status.name).toBe('RUNNING');
    expect(new Set(await taskBuilds(client.workflow.getHandle(budget.workflowId, onB.runId)))).toEqual(
      new Set(['build-b']),
    );
    const previous = await client.workflow.getHandle(budget.workflowId, onA.runId).describe();
    expect(previous.status.name).toBe('CONTINUED_AS_NEW');
  });
});
