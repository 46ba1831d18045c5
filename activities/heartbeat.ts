import { Context } from '@temporalio/activity';
import { withCancellation } from '../connectors/support-api/index.js';

/**
 * Heartbeats every few seconds while `work` runs, so a killed worker is noticed within the heartbeat
 * timeout instead of the start-to-close timeout, and a cancelled activity learns it at the next beat. The
 * activity's cancellation signal (it also fires when a timeout of the attempt passes) aborts every Support
 * API request `work` makes: a cancelled or timed-out attempt gives back its socket and its rate slot at
 * once rather than when the server lets go. Outside an activity context (unit tests) it just runs `work`.
 */
export async function withHeartbeat<R>(
  work: () => Promise<R>,
  everyMs = 3000,
  details?: () => unknown,
): Promise<R> {
  let context: Context | undefined;
  try {
    context = Context.current();
  } catch {
    return work();
  }
  const beat = () => {
    const progress = progressOf.get(context!);
    const d = details?.();
    context?.heartbeat(progress === undefined ? d : { ...(d as object | undefined), progress });
  };
  beats.set(context, beat);
  beat();
  const timer = setInterval(beat, everyMs);
  try {
    return await withCancellation(context.cancellationSignal, work);
  } catch (err) {
    beat(); // the details (requests sent) reach the next attempt
    throw err;
  } finally {
    clearInterval(timer);
  }
}

/** The progress an activity reported (recordProgress), carried by every beat of its heartbeat. */
const progressOf = new WeakMap<Context, unknown>();
const beats = new WeakMap<Context, () => void>();

/**
 * Records how far a looping activity got (activities/thread-batch.ts) and heartbeats it at once: a retried
 * attempt starts from it (earlierProgress). Outside an activity context, nothing.
 */
export function recordProgress(progress: unknown): void {
  let context: Context;
  try {
    context = Context.current();
  } catch {
    return;
  }
  progressOf.set(context, progress);
  (beats.get(context) ?? (() => context.heartbeat({ progress })))();
}

/** The progress the last heartbeat of an earlier attempt carried, if any. */
export function earlierProgress<T>(): T | undefined {
  try {
    const details = Context.current().info.heartbeatDetails as { progress?: T } | undefined;
    return details?.progress;
  } catch {
    return undefined;
  }
}
