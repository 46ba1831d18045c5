import { temporalFor } from '../embedded.js';
import {
  isPermissionDenied,
  registerSearchAttributes,
  SETUP_PERMISSION_HINT,
} from '../search-attributes-setup.js';
import { withConfig } from './context.js';

/**
 * `setup`: registers what the sync needs on a Temporal cluster it did not start — the custom search
 * attributes of the window workflows — idempotently. `worker` runs the same at start.
 */
export function setupCommand(opts: { config?: string }): Promise<number> {
  return withConfig(opts, async (config, logger) => {
    const temporal = await temporalFor(config, logger, { embedIfUnset: false });
    try {
      const result = await registerSearchAttributes(temporal.client, config.TEMPORAL_NAMESPACE);
      process.stdout.write(
        `search attributes on namespace ${result.namespace}: added ${result.added.join(', ') || 'none'}; already there ${result.present.join(', ') || 'none'}\n`,
      );
      return 0;
    } catch (err) {
      if (isPermissionDenied(err)) {
        process.stderr.write(
          `setup: not allowed to register search attributes. Ask for ${SETUP_PERMISSION_HINT}\n`,
        );
        return 1;
      }
      throw err;
    } finally {
      await temporal.close();
    }
  });
}
