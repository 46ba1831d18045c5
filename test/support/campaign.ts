/**
 * The size of a long scenario: rounds, kills, warehouses. `npm test` runs each at the smallest size
 * whose assertions still fail when the behaviour breaks, so that CI stays within its time; `npm run campaign`
 * (bench/campaign.ts) sets SUPPORT_SYNC_CAMPAIGN=1 and runs the same files, with the same assertions, at the
 * full size, where rarer interleavings turn up (a kill while the replacing worker recovers, rounds of reopens
 * and resolutions on BigQuery, a scenario on the second warehouse).
 */
export const CAMPAIGN_ENV = 'SUPPORT_SYNC_CAMPAIGN';

/** Whether this process runs the campaign's sizes. */
export const inCampaign = (): boolean => process.env[CAMPAIGN_ENV] === '1';

/** `full` in a campaign run, `ci` in the test suite. */
export function sized<T>(ci: T, full: T): T {
  return inCampaign() ? full : ci;
}
