import { EXPORT_STREAMS, STREAMS, streamsOfKind } from '../../schemas/streams.js';
import { readState } from '../checkpoints.js';
import type { ActivityDeps } from '../deps.js';
import type { FollowerStream } from './metrics.js';

/**
 * Which of the streams tie-out metrics read besides tickets this warehouse has ever synced, from their
 * checkpoints: a thread read to the end, an export window's high-water mark. A metric of a stream never synced is skipped, not a mismatch.
 */
export async function syncedStreams(destination: ActivityDeps['destination']): Promise<Set<FollowerStream>> {
  const out = new Set<FollowerStream>();
  // The thread queue serves the threads stream: synced once a thread was read to the end.
  if ((await destination.listCheckpoints({ threadQueue: true, status: 'complete', limit: 1 })).length > 0) {
    for (const stream of streamsOfKind(STREAMS, 'threads')) out.add(stream);
  }
  // An export is synced once the pass that reads every item (its first) has a high-water mark.
  for (const stream of EXPORT_STREAMS) {
    const pass = STREAMS[stream].passes[0];
    if ((await readState(destination, { kind: 'high_water_mark', stream: pass }))?.high_water_mark)
      out.add(stream);
  }
  return out;
}
