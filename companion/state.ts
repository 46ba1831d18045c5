import type { Logger } from 'pino';
import type { CursorCodec } from './http/cursor.js';
import type { RuntimeOptions } from './options.js';
import type { World } from './world/index.js';

export interface AttachmentRecord {
  id: string;
  orgId: string;
  fileName: string;
  mimeType: string;
  declaredSize: number;
  expiresAt: number;
  data: Buffer | null;
  confirmed: boolean;
  usedByMessageId: string | null;
}

export interface IdempotencyEntry {
  bodyHash: string;
  state: 'processing' | 'done';
  status: number;
  body: unknown;
  expiresAt: number;
}

/** Everything the routes share: the world, codecs, stores and the live options. */
export interface CompanionState {
  world: World;
  cursors: CursorCodec;
  /** HMAC secret for upload URLs. */
  uploadSecret: string;
  baseUrl: string;
  /** Where the workspace's object store is under `/uploads` and `/files`: `` alone on the port, `/<id>` among many. */
  storagePath: string;
  options: RuntimeOptions;
  attachments: Map<string, AttachmentRecord>;
  idempotency: Map<string, IdempotencyEntry>;
  viewCounts: Map<string, { at: number; count: number }>;
  log: Logger;
  /** Companion clock in ms. */
  now: () => number;
  /** Variant world (option `variant`, companion/variant.ts); 0 = the default world. */
  variant: number;
}
