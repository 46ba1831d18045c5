import pino from 'pino';
import { type CompanionHandle, type CompanionOptions, startCompanion } from '../../../companion/index.js';
import type { SupportApiClientOptions } from '../../../connectors/support-api/client.js';
import { RateGovernor } from '../../../connectors/support-api/rate-governor.js';
import { Secret } from '../../../schemas/secret.js';
import { WritingApiClient } from '../../support/api-writes.js';

export type KeyLabel = keyof CompanionHandle['keys'];

/** A client of the companion (writes too) with its own governor and a log captured in `lines`. */
export function clientFor(
  handle: CompanionHandle,
  label: KeyLabel = 'admin',
  opts: Partial<SupportApiClientOptions> = {},
) {
  const lines: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
  const client = new WritingApiClient({
    baseUrl: handle.baseUrl,
    apiKey: new Secret(handle.keys[label]),
    logger,
    governor: new RateGovernor(),
    retry: { baseDelayMs: 10, maxDelayMs: 100 },
    ...opts,
  });
  return { client, lines };
}

export function companion(options: CompanionOptions): Promise<CompanionHandle> {
  return startCompanion({ logLevel: 'silent', ...options });
}
