import type { SyncRunRecord } from '../schemas/warehouse.js';
import { deletionCutoff, planRun, prepareDestination, recordRun } from './bookkeeping.js';
import type { ActivityDeps } from './deps.js';
import { requeueUnsettledThreads } from './threads.js';

/**
 * The start of a sync run in one activity, where it was five (each an activity's history events and a
 * round trip through Temporal before the first page): the destination prepared, the run's `running` row,
 * the deletion cutoff (taken before any page of the run is written), the plan, and, when the run reads
 * threads, the unsettled ones queued again. Each step is idempotent, so a retry repeats them whole; the
 * cutoff of a retry is later, still before the run's first page.
 */
export function beginRun(deps: ActivityDeps) {
  const prepare = prepareDestination(deps);
  const record = recordRun(deps);
  const cutoff = deletionCutoff(deps);
  const plan = planRun(deps);
  const requeue = requeueUnsettledThreads(deps);
  return async (input: { run: SyncRunRecord; plan: Parameters<typeof plan>[0]; requeueThreads: boolean }) => {
    await prepare();
    await record(input.run);
    const deletionSince = await cutoff();
    const planned = await plan(input.plan);
    if (input.requeueThreads) await requeue();
    return { deletionSince, plan: planned };
  };
}
