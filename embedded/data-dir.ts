import { resolve } from 'node:path';

/** Where the main job keeps its embedded state (PostgreSQL cluster, Temporal history, the demo's world). */
export const DATA_DIR = resolve(process.env['SUPPORT_SYNC_DATA_DIR'] ?? '.data');
