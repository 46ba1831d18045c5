import type { Logger } from 'pino';
import type { Destination } from '../connectors/destination.js';
import type { SupportApiClient } from '../connectors/support-api/index.js';
import type { BusinessHoursFile } from '../schemas/business-hours.js';
import type { SyncObserver } from './observer.js';

/** What activities need, built once in the worker's composition root (worker/compose.ts). */
export interface ActivityDeps {
  client: SupportApiClient;
  destination: Destination;
  logger: Logger;
  /** Wall clock for `deleted_at` and thread look-back; injectable for tests. */
  now?: () => Date;
  /** The business-hours file (SYNC_BUSINESS_HOURS), written to business_calendar every run; none: no calendar. */
  businessHours?: BusinessHoursFile;
  /**
   * The most pages one scope (a window, a list, the sweep, a thread) may take, counted by its checkpoint
   * (SYNC_MAX_PAGES; default DEFAULT_MAX_PAGES_PER_SCOPE in sync-page.ts).
   */
  maxPagesPerScope?: number;
  /** Told of pages read, rows written and runs recorded (the worker's metrics); none: nobody watches. */
  observer?: SyncObserver;
}
