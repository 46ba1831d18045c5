/**
 * `npm run build`'s last step: bundles the workflows once into `dist/workflow-bundle.js`, which a worker
 * running from `dist/` loads (worker/workflow-bundle.ts) instead of bundling at every start.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUILT_BUNDLE_FILE, bundleWorkflows, contentHashOf } from '../worker/workflow-bundle.js';

const dist = fileURLToPath(new URL('../dist/', import.meta.url));
const code = await bundleWorkflows();
await mkdir(dist, { recursive: true });
await writeFile(join(dist, BUILT_BUNDLE_FILE), code);
process.stderr.write(
  `workflows bundled: dist/${BUILT_BUNDLE_FILE} (${(code.length / 1e6).toFixed(1)} MB, content ${contentHashOf(code)})\n`,
);
