import type { Logger } from 'pino';
import { CursorRejectedError } from '../connectors/support-api/index.js';

/**
 * Fetches a page from `cursor`; if the API rejects the cursor (expired, or bound to other filters or
 * another key after a rotation), fetches the first page of the scope instead and says so loudly. Rows
 * already written are re-read and upserted, so nothing is skipped.
 */
export async function fetchWithRestart<P>(
  logger: Logger,
  where: string,
  cursor: string | null,
  fetch: (cursor: string | null) => Promise<P>,
): Promise<{ page: P; restarted: boolean }> {
  try {
    return { page: await fetch(cursor), restarted: false };
  } catch (err) {
    if (!(err instanceof CursorRejectedError) || cursor === null) throw err;
    logger.warn(
      { where, requestId: err.apiError.requestId },
      'cursor rejected by the API: restarting the scope from its start',
    );
    return { page: await fetch(null), restarted: true };
  }
}
