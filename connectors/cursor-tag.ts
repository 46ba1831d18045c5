import { hash } from 'node:crypto';
import type { Checkpoint } from '../schemas/warehouse.js';

/**
 * A short, stable tag of a cursor: what a page activity reports to its workflow (cursors stay out of
 * history) and what the workflow hands back with the next page, so a destination that keeps checkpoints
 * in memory can tell whether the one it holds is the one the workflow last saw.
 */
export function cursorTagOf(cursor: string): string {
  return hash('sha256', cursor, 'hex').slice(0, 16);
}

/**
 * A short tag of a whole checkpoint as a listing read it (cursor, status, mark, counts and when it was
 * written): the thread listing hands it to the lane, whose first page hands it back, so a destination that
 * holds the checkpoints it listed can answer that page from memory — and a checkpoint written since (by
 * this process: it holds the new one; the tag no longer matches) is read again.
 */
export function checkpointTagOf(checkpoint: Checkpoint): string {
  const { stream, scope, cursor, high_water_mark, status, pages, rows, updated_at } = checkpoint;
  return cursorTagOf(
    JSON.stringify([stream, scope, cursor, high_water_mark, status, pages, rows, updated_at]),
  );
}

/**
 * Whether `checkpoint` is the one a caller holding `tag` last saw: the tag of its cursor (a page's report)
 * or of the whole checkpoint (a listing's). One tag for a caller to pass whichever it has; the two cannot
 * be mistaken for each other, since a cursor would have to be the checkpoint's own JSON to hash alike.
 */
export function bearsTag(checkpoint: Checkpoint, tag: string): boolean {
  return (
    (checkpoint.cursor != null && cursorTagOf(checkpoint.cursor) === tag) ||
    checkpointTagOf(checkpoint) === tag
  );
}
