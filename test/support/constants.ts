/** The analytics task queue used by workflow tests; the dev server runs it with a single partition. */
export const ANALYTICS_TEST_TASK_QUEUE = 'support-sync-test-analytics';
