import { defineQuery, setHandler } from '@temporalio/workflow';
import type { ChildProgress, RunProgress } from '../schemas/run-summary.js';

/** Live counts of a stream/window workflow: pages and rows written so far, and what it is on. */
export const childProgressQuery = defineQuery<ChildProgress>('progress');

/** The run's per-stream progress (the CLI's live display polls it). */
export const runProgressQuery = defineQuery<RunProgress>('progress');

/** A mutable progress record with its query handler installed. */
export function trackChildProgress(
  detail: string | null = null,
  carried: { pages: number; rows: number; requests?: number | undefined } = { pages: 0, rows: 0 },
): ChildProgress {
  const progress: ChildProgress = {
    pages: carried.pages,
    rows: carried.rows,
    requests: carried.requests ?? 0,
    detail,
  };
  setHandler(childProgressQuery, () => progress);
  return progress;
}
