import type { StreamCounts } from '../../schemas/run-summary.js';
import { encodeStateKey } from '../../schemas/state-key.js';
import { REFERENCE_STREAMS, type ReferenceStream, STREAMS } from '../../schemas/streams.js';
import { bookkeeping, classActivities } from '../activity-proxies.js';
import { pageGuard } from '../page-guard.js';
import { readPages } from '../page-loop.js';
import { type Lane, type RunContext, runStream, track } from './context.js';
import { inRunWindow } from './in-run.js';

/**
 * The reference streams of the run (views, tags, teams, agents, metric catalog): a full snapshot of each,
 * read by the run itself (workflows/run/in-run.ts), one lane per stream.
 */
export function referenceLanes(ctx: RunContext): Lane[] {
  const { startedAt, before } = ctx;
  return REFERENCE_STREAMS.filter((s) => ctx.input.streams.includes(s)).map((stream) => {
    const entry = track(ctx, stream);
    entry.windowsTotal = 1;
    return () =>
      runStream(entry, async () => {
        await inRunWindow(
          ctx,
          entry,
          { stream, windowStart: startedAt, windowEnd: before },
          { windowStart: null, windowEnd: null },
          () => readSnapshot(ctx, stream),
        );
      });
  });
}

/**
 * A full snapshot of one reference stream: a run of pages per activity on the stream's route class queue,
 * the cursor checkpointed with each page under the run's snapshot scope (a retry or a replayed run resumes
 * at the page); afterwards the rows the snapshot did not contain get `_deleted_at`.
 */
async function readSnapshot(ctx: RunContext, stream: ReferenceStream): Promise<StreamCounts> {
  const { runId, mode, settings, patienceMs, deletionSince } = ctx;
  const progress = { pages: 0, rows: 0, requests: 0, detail: null };
  const { scope } = encodeStateKey({ kind: 'snapshot', stream, runId });
  const pages = classActivities(STREAMS[stream].routeClass, { patienceMs });
  await readPages({
    input: { mode },
    scope,
    guard: pageGuard(stream),
    progress,
    // The run never continues as new: a snapshot's few activities stay in its history.
    carryOn: null,
    read: (options) =>
      pages.syncReferencePages({ stream, scope, pageSize: settings.pageSize, runId, ...options }),
  });
  // A complete snapshot: whatever it did not contain is gone from the source.
  await bookkeeping.markUnseenDeleted({ table: STREAMS[stream].table, since: deletionSince });
  return { pages: progress.pages, rows: progress.rows, requests: progress.requests, windows: 1 };
}
