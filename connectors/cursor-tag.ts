import { createHash } from 'node:crypto';

/**
 * A short, stable tag of a cursor: what a page activity reports to its workflow (cursors stay out of
 * history) and what the workflow hands back with the next page, so a destination that keeps checkpoints
 * in memory can tell whether the one it holds is the one the workflow last saw.
 */
export function cursorTagOf(cursor: string): string {
  return createHash('sha256').update(cursor).digest('hex').slice(0, 16);
}
