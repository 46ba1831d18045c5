import type { Logger } from 'pino';
import { fetchViewsPage, SupportApiError } from '../../connectors/support-api/index.js';
import type { Dependencies } from '../../worker/compose.js';

/** A failure found before anything started: the CLI prints it and exits non-zero. */
export class PreflightError extends Error {}

/**
 * Before a run starts: one cheap authenticated request (a wrong or revoked key fails here, with the API's
 * code and request_id, and nothing is written), then the destination's tables are created or migrated.
 */
export async function preflight(deps: Dependencies, logger: Logger): Promise<void> {
  try {
    await fetchViewsPage(deps.client, { limit: 1 });
  } catch (err) {
    if (err instanceof SupportApiError && (err.status === 401 || err.status === 403)) {
      throw new PreflightError(`the Support API refused the key: ${err.message}`);
    }
    throw new PreflightError(`the Support API is not usable: ${(err as Error).message}`);
  }
  try {
    await deps.destination.prepare();
  } catch (err) {
    throw new PreflightError(`the destination is not usable: ${(err as Error).message}`);
  }
  logger.debug('preflight passed');
}
