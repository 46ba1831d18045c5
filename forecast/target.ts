import { createHash } from 'node:crypto';
import { keyFingerprint } from '../connectors/support-api/index.js';
import type { Config } from '../schemas/config.js';

/**
 * Which source, key and warehouse a forecast is about, as a hash: a stored forecast is compared only with
 * a run against the same ones. No URL, key or password can be read back from it (the key enters as its
 * fingerprint, the destination without its password).
 */
export function targetOf(config: Config): string {
  const destination = new URL(config.DESTINATION_URL.reveal());
  destination.password = '';
  return createHash('sha256')
    .update(
      [
        config.SUPPORT_API_URL.replace(/\/+$/, ''),
        keyFingerprint(config.SUPPORT_API_KEY),
        destination.toString(),
        config.POSTGRES_SCHEMA,
      ].join('\n'),
    )
    .digest('hex')
    .slice(0, 16);
}
