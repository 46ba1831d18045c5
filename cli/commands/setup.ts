import {
  registerSearchAttributesIfAllowed,
  SETUP_PERMISSION_HINT,
} from '../../worker/search-attributes-setup.js';
import { withTemporal } from './context.js';

/**
 * `setup`: registers what the sync needs on a Temporal cluster it did not start — the custom search
 * attributes of the window workflows — idempotently. `worker` runs the same at start.
 */
export function setupCommand(opts: { config?: string }): Promise<number> {
  return withTemporal(opts, { embedIfUnset: false }, async ({ temporal }) => {
    const result = await registerSearchAttributesIfAllowed(temporal.client, temporal.namespace);
    if (result === 'permission-denied') {
      process.stderr.write(
        `setup: not allowed to register search attributes. Ask for ${SETUP_PERMISSION_HINT}\n`,
      );
      return 1;
    }
    process.stdout.write(
      `search attributes on namespace ${result.namespace}: added ${result.added.join(', ') || 'none'}; already there ${result.present.join(', ') || 'none'}\n`,
    );
    return 0;
  });
}
