import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CompanionHandle } from '../companion/index.js';
import { DATA_DIR } from './data-dir.js';
import { devOnly } from './temporal.js';

/** The seeded companion as the demo source. */
export async function embeddedSource(options: {
  seed: number;
  tickets: number;
  rateLimitWindowMs: number;
}): Promise<CompanionHandle> {
  const { startCompanion } = await devOnly(
    () => import('../companion/index.js'),
    { module: 'companion/index.js' },
    'the demo source (the companion)',
    'SUPPORT_API_URL and SUPPORT_API_KEY to your workspace',
  );
  return startCompanion({
    seed: options.seed,
    tickets: options.tickets,
    port: 0,
    rateLimitWindowMs: options.rateLimitWindowMs,
    // The demo's workspace lives: a second run shows changes flowing. It lives since the first start (kept in
    // .data), so a restart serves the workspace the warehouse was synced from, plus what changed since.
    live: { intervalMs: 2000, changesPerTick: 3, since: demoWorldSince(options.seed, options.tickets) },
  });
}

/**
 * When the demo's world began: `.data/companion.json`, written by the first start. A different seed or size
 * begins a new world (and so does a new data directory, with a new warehouse).
 */
function demoWorldSince(seed: number, tickets: number): Date {
  const file = join(DATA_DIR, 'companion.json');
  try {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as {
      seed?: number;
      tickets?: number;
      since?: string;
    };
    if (
      saved.seed === seed &&
      saved.tickets === tickets &&
      saved.since &&
      !Number.isNaN(Date.parse(saved.since))
    )
      return new Date(saved.since);
  } catch {
    // first start, or an unreadable file: a new world
  }
  const since = new Date();
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(file, `${JSON.stringify({ seed, tickets, since: since.toISOString() })}\n`);
  return since;
}
