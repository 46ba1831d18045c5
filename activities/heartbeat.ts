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
  const beat = () => context?.heartbeat(details?.());
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
