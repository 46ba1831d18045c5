import { rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { stringify } from 'yaml';
import { DATA_DIR } from './data-dir.js';

/**
 * The settings a running `npm start` chose for itself (the companion's URL and key, the embedded warehouse,
 * the dev server's address), written as a `--config` file so that a second terminal reaches the same demo:
 * `npm run cli -- replay <id> --wait --config .data/demo.yaml`, `npm run status -- --config .data/demo.yaml`.
 * Mode 0600 from creation (it holds the demo's key and the warehouse password); removed when the demo stops.
 */
export const DEMO_CONFIG_FILE = join(DATA_DIR, 'demo.yaml');

export async function writeDemoConfig(settings: Readonly<Record<string, string>>): Promise<string> {
  await rm(DEMO_CONFIG_FILE, { force: true }); // a stale file keeps its old mode; start afresh at 0600
  await writeFile(
    DEMO_CONFIG_FILE,
    `# Written by npm start for the demo it is running; removed when it stops.\n${stringify(settings)}`,
    { mode: 0o600 },
  );
  return relative(process.cwd(), DEMO_CONFIG_FILE) || DEMO_CONFIG_FILE;
}

export async function removeDemoConfig(): Promise<void> {
  await rm(DEMO_CONFIG_FILE, { force: true });
}
