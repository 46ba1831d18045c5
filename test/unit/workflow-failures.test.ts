import {
  ActivityFailure,
  ApplicationFailure,
  ChildWorkflowFailure,
  TimeoutFailure,
} from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { innermostMessage } from '../../workflows/failures.js';

const activityFailed = (activityType: string, cause: Error) =>
  new ActivityFailure('Activity task failed', activityType, '7', 'MAXIMUM_ATTEMPTS_REACHED', 'worker', cause);

describe('innermostMessage (what a failed window records)', () => {
  it('gives the API error under an activity and a child, not the wrappers', () => {
    const api = ApplicationFailure.nonRetryable('401 unauthorized (request id r-1)', 'ApiError');
    const child = new ChildWorkflowFailure(
      'ns',
      { workflowId: 'w', runId: 'r' },
      'threadsWorkflow',
      'NON_RETRYABLE_FAILURE',
      activityFailed('syncThreadPage', api),
    );
    expect(innermostMessage(child)).toBe('401 unauthorized (request id r-1)');
  });

  it('names the activity that timed out and how (a bare "Activity task timed out" says neither)', () => {
    const timedOut = activityFailed(
      'listQueuedThreadCheckpoints',
      new TimeoutFailure('Activity task timed out', undefined, 'START_TO_CLOSE'),
    );
    expect(innermostMessage(timedOut)).toBe(
      'listQueuedThreadCheckpoints: Activity task timed out (START_TO_CLOSE)',
    );
  });

  it('names every timeout on the way: the patience that ran out over the attempt that hung', () => {
    const hung = new TimeoutFailure('activity Heartbeat timeout', undefined, 'HEARTBEAT');
    const patience = new TimeoutFailure('activity ScheduleToClose timeout', undefined, 'SCHEDULE_TO_CLOSE');
    Object.defineProperty(patience, 'cause', { value: hung });
    expect(innermostMessage(activityFailed('flushStaged', patience))).toBe(
      'flushStaged: activity Heartbeat timeout (SCHEDULE_TO_CLOSE after HEARTBEAT)',
    );
  });
});
