/**
 * The fairness bench's one workflow (bench/fairness.ts): a run of `pages` stub page activities, `parallel` at a
 * time, on `activityQueue` (default: the workflow's own queue). Priority and fairness key come from the start
 * options: activities inherit them.
 */
import { proxyActivities } from '@temporalio/workflow';

export interface PagesRunInput {
  pages: number;
  parallel: number;
  pageMs: number;
  activityQueue?: string;
}

interface PageActivities {
  page(ms: number): Promise<void>;
}

export async function pagesRun(input: PagesRunInput): Promise<void> {
  const { page } = proxyActivities<PageActivities>({
    startToCloseTimeout: '5 minutes',
    ...(input.activityQueue ? { taskQueue: input.activityQueue } : {}),
  });
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(input.parallel, input.pages) }, async () => {
      while (next < input.pages) {
        next++;
        await page(input.pageMs);
      }
    }),
  );
}
