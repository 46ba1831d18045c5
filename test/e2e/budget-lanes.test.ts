import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HIGH_WATER_MARK_SCOPE as HWM_SCOPE } from '../../schemas/state-key.js';
import { DAY_MS, type Pipeline, startPipeline } from './harness.js';

/** The run's child workflow ids, and the order the parent saw them start and close. */
async function childEvents(p: Pipeline, runWorkflowId: string) {
  const history = await p.env.client.workflow.getHandle(runWorkflowId).fetchHistory();
  const events: { kind: 'started' | 'closed'; workflowId: string }[] = [];
  for (const e of history.events ?? []) {
    const started = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
    if (started) events.push({ kind: 'started', workflowId: started });
    const closed =
      e.childWorkflowExecutionCompletedEventAttributes?.workflowExecution?.workflowId ??
      e.childWorkflowExecutionFailedEventAttributes?.workflowExecution?.workflowId;
    if (closed) events.push({ kind: 'closed', workflowId: closed });
  }
  return events;
}

/**
 * Issue 22: every class keeps a request in flight while it has work anywhere in the run. The export
 * windows of one pass run at once (a window is a chain of dependent pages) while the high-water mark still
 * only moves over complete windows; the rolling thread re-read spends spare detail budget and never holds
 * a run open once the run's other streams are done.
 */
describe('budget lanes', () => {
  let p: Pipeline;
  const startDate = new Date(Date.now() - 2 * 365 * DAY_MS);

  beforeAll(async () => {
    p = await startPipeline('e2e_budget_lanes', {
      companion: { seed: 3, tickets: 30, rateLimits: false },
      env: { SYNC_START_DATE: startDate.toISOString() },
    });
  });
  afterAll(async () => {
    await p?.close();
  });

  it('reads several windows of one export pass at once, and moves the mark over all of them', async () => {
    const run = await p.run('incremental', {}, ['agent_sessions']);
    expect(run.status).toBe('succeeded');
    const events = await childEvents(p, run.workflow_id);
    const windows = [...new Set(events.map((e) => e.workflowId))];
    // Two years in 90-day windows.
    expect(windows.length).toBeGreaterThanOrEqual(9);
    // Before the change, each window closed before the next one started: at most one open at a time.
    let open = 0;
    let mostOpen = 0;
    for (const e of events) {
      open += e.kind === 'started' ? 1 : -1;
      mostOpen = Math.max(mostOpen, open);
    }
    expect(mostOpen).toBeGreaterThanOrEqual(2);
    expect(open).toBe(0);
    // The mark is the end of the newest window (the run's end): every window completed.
    const newestEnd = windows
      .map((id) => id.split('/')[2]!)
      .sort()
      .at(-1)!;
    const mark = await p.deps.destination.readCheckpoint('agent_sessions', HWM_SCOPE);
    expect(mark?.high_water_mark).toBeDefined();
    expect(Date.parse(mark!.high_water_mark!)).toBe(Date.parse(newestEnd));
  });

  it('a run with nothing but tickets and threads re-reads while the listing holds it open, and one round at most after', async () => {
    const streams = ['tickets', 'ticket_messages'] as const;
    await p.run('incremental', {}, [...streams]);
    // No other stream: the run is idle as soon as the listing is done. Before the change the re-read then
    // began (600 a run at least: every thread of this workspace), after the listing had ended.
    const noChange = await p.run('incremental', { threadReverifyPerRun: 600 }, [...streams]);
    expect(noChange.status).toBe('succeeded');
    const threadsId = (await childEvents(p, noChange.workflow_id)).find((e) =>
      e.workflowId.startsWith('ticket_messages/'),
    )!.workflowId;
    const history = await p.env.client.workflow.getHandle(threadsId).fetchHistory();
    const events = history.events ?? [];
    const listed = events.findIndex(
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'ticketsListed',
    );
    expect(listed).toBeGreaterThan(0);
    // After the listing: one round of the re-read at most (the round every run reads), of a few threads.
    const roundsAfterListing = events
      .slice(listed)
      .map((e) => e.activityTaskScheduledEventAttributes)
      .filter((a) => a?.activityType?.name === 'queueThreadsToReverify')
      .map(
        (a) => (JSON.parse(Buffer.from(a!.input!.payloads![0]!.data!).toString()) as { limit: number }).limit,
      );
    expect(roundsAfterListing.length).toBeLessThanOrEqual(1);
    for (const limit of roundsAfterListing) expect(limit).toBeLessThanOrEqual(4);
  });
});
