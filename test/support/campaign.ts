/**
 * The size of a long scenario: rounds, kills, an outage's length. `npm test` runs each at the smallest size
 * whose assertions still fail when the behaviour breaks, so that CI stays within its time; `npm run campaign`
 * (bench/campaign.ts) sets SUPPORT_SYNC_CAMPAIGN=1 and runs the same files, with the same assertions, at the
 * full size, which is where rarer interleavings (a kill during a recovery, a history of many intervals on
 * BigQuery) turn up.
 */
export const CAMPAIGN_ENV = 'SUPPORT_SYNC_CAMPAIGN';

/** Whether this process runs the campaign's sizes. */
export const inCampaign = (): boolean => process.env[CAMPAIGN_ENV] === '1';

/** `full` in a campaign run, `ci` in the test suite. */
export function sized<T>(ci: T, full: T): T {
  return inCampaign() ? full : ci;
}
