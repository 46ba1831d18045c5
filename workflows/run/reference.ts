import { executeChild } from '@temporalio/workflow';
import { REFERENCE_STREAMS } from '../../schemas/streams.js';
import { referenceStreamWorkflow } from '../reference-stream.js';
import { child, type Lane, type RunContext, runStream, track } from './context.js';

/** The reference streams of the run (views, tags, teams, agents, metric catalog): one snapshot child each. */
export function referenceLanes(ctx: RunContext): Lane[] {
  const { runId, mode, settings, deletionSince, patienceMs, startedAt, before } = ctx;
  return REFERENCE_STREAMS.filter((s) => ctx.input.streams.includes(s)).map((stream) => {
    const entry = track(ctx, stream);
    entry.windowsTotal = 1;
    return () =>
      runStream(entry, async () => {
        await child(ctx, entry, { stream, windowStart: startedAt, windowEnd: before }, (options) =>
          executeChild(referenceStreamWorkflow, {
            ...options,
            args: [{ runId, mode, stream, pageSize: settings.pageSize, deletionSince, patienceMs }],
          }),
        );
      });
  });
}
