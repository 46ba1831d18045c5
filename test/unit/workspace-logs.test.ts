import { defaultPayloadConverter } from '@temporalio/common';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import type { Activities } from '../../activities/index.js';
import type { Config } from '../../schemas/config.js';
import { Secrets } from '../../schemas/secret.js';
import { WORKSPACE_HEADER } from '../../schemas/workspaces.js';
import { createLogger } from '../../worker/logger.js';
import { runtimeLogFields } from '../../worker/temporal-runtime.js';
import { workspaceActivityInterceptors } from '../../worker/workspace-context.js';
import { WorkspaceRouter } from '../../worker/workspace-router.js';

/** The process logger (worker/logger.ts) on a sink the test reads. */
function sink(workspace?: string) {
  const raw: string[] = [];
  const log = createLogger('info', new Secrets(), { write: (l: string) => raw.push(l) }, workspace);
  return { log, lines: () => raw.map((l) => JSON.parse(l) as Record<string, unknown>), raw };
}

/** One activity as the worker runs it: its interceptors made for it, its header naming `workspace`. */
function runActivity<T>(workspace: string | undefined, fn: () => Promise<T>) {
  const interceptors = workspaceActivityInterceptors(undefined as never);
  const inbound = interceptors.inbound as ActivityInboundCallsInterceptor;
  const input = {
    args: [],
    headers:
      workspace === undefined ? {} : { [WORKSPACE_HEADER]: defaultPayloadConverter.toPayload(workspace) },
  } as unknown as ActivityExecuteInput;
  const result = inbound.execute!(input, () => fn());
  const attributes = () => interceptors.outbound!.getLogAttributes!({ activityId: '1' }, (a) => a);
  return { result, attributes };
}

describe("every log line of a workspace's activity names the workspace (worker/logger.ts, worker/workspace-context.ts)", () => {
  it("a line an activity's dependencies write, through the router, has its workspace; the default's has none", async () => {
    const { log, lines } = sink();
    // What a workspace's activities log through: the process logger its dependencies were built with.
    const activitiesLogging = (who: string) =>
      ({
        syncPage: async () => {
          log.info({ page: 1 }, `${who} page written`);
          await new Promise((r) => setTimeout(r, 1));
          log.warn('after an await too');
        },
      }) as unknown as Activities;
    const router = new WorkspaceRouter({
      own: {
        workspace: 'default',
        dependencies: { activities: activitiesLogging('own'), close: async () => {} },
      },
      configOf: (workspace) => ({ SYNC_WORKSPACE: workspace }) as unknown as Config,
      build: async () => ({ activities: activitiesLogging('acme'), close: async () => {} }),
      logger: log,
    });
    const activities = router.activities() as unknown as { syncPage: () => Promise<void> };
    await runActivity('acme', () => activities.syncPage()).result;
    await runActivity(undefined, () => activities.syncPage()).result;
    log.info('outside any activity');
    const byMessage = lines().map((l) => [l['msg'], l['workspace']]);
    expect(byMessage).toEqual([
      ['workspace served', 'acme'],
      ['acme page written', 'acme'],
      ['after an await too', 'acme'],
      ['own page written', undefined],
      ['after an await too', undefined],
      ['outside any activity', undefined],
    ]);
    await router.close();
  });

  it("a line's own workspace wins, written once; outside an activity, the process's own workspace unless default", () => {
    const { log, raw } = sink('globex');
    log.info('process line');
    log.info({ workspace: 'acme' }, 'a line about another workspace');
    expect(raw.map((l) => JSON.parse(l).workspace)).toEqual(['globex', 'acme']);
    expect(raw[1]!.match(/"workspace"/g)).toHaveLength(1);
    const plain = sink('default');
    plain.log.info('x');
    expect(plain.lines()[0]).not.toHaveProperty('workspace');
  });

  it("the SDK's lines of an activity or a workflow (their log attributes) carry the workspace as the line's own field", async () => {
    const acme = runActivity('acme', async () => 'done');
    expect(await acme.result).toBe('done');
    // Asked after the activity ran too (the worker logs "Activity failed" once it returned).
    expect(acme.attributes()).toEqual({ activityId: '1', workspace: 'acme' });
    const own = runActivity(undefined, async () => 'done');
    await own.result;
    expect(own.attributes()).toEqual({ activityId: '1' });
    expect(runtimeLogFields({ workflowId: 'acme/x', workspace: 'acme' })).toEqual({
      workspace: 'acme',
      temporal: { workflowId: 'acme/x' },
    });
    expect(runtimeLogFields({ workflowId: 'x' })).toEqual({ temporal: { workflowId: 'x' } });
    expect(runtimeLogFields(undefined)).toEqual({ temporal: undefined });
  });
});
