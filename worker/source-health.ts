import type { WorkflowClient } from '@temporalio/client';
import type { RunProgress } from '../schemas/run-summary.js';

/** A page activity retrying this often is not a blip: the source is failing (an outage or a bad window). */
const FAILING_AFTER_ATTEMPTS = 3;

/**
 * Looks at the pending activities of each running stream's current window (Temporal's describe) and, where
 * one keeps failing, says so on the stream: "source failing since <first failed attempt> (attempt N: <last
 * failure>)". The run itself only fails after SYNC_SOURCE_PATIENCE; this is what the live display shows
 * meanwhile.
 */
export async function annotateFailingSource(
  client: WorkflowClient,
  progress: RunProgress,
): Promise<RunProgress> {
  const streams = { ...progress.streams };
  await Promise.all(
    Object.entries(streams).map(async ([name, entry]) => {
      if (entry.status !== 'running' || !entry.current) return;
      try {
        const described = await client.getHandle(entry.current).describe();
        const failing = (described.raw.pendingActivities ?? []).filter(
          (a) => (a.attempt ?? 0) >= FAILING_AFTER_ATTEMPTS && a.lastFailure,
        );
        const worst = failing.sort((a, b) => (b.attempt ?? 0) - (a.attempt ?? 0))[0];
        if (!worst) return;
        const since = worst.scheduledTime?.seconds
          ? new Date(Number(worst.scheduledTime.seconds) * 1000).toISOString()
          : 'earlier';
        streams[name] = {
          ...entry,
          current: `${entry.current} — source failing since ${since} (attempt ${worst.attempt}: ${worst.lastFailure?.message ?? 'error'})`,
        };
      } catch {
        // a window that just closed: nothing to say
      }
    }),
  );
  return { ...progress, streams };
}
