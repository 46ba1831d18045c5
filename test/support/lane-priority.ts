import { getPriority, setPriority } from 'node:os';
import { expect } from 'vitest';
import { laneOfFile } from './lanes.js';

/**
 * The BigQuery lane's files compute (the emulator) and are the suite's longest chain; the other files mostly
 * wait, on timers, backoffs and processes. On two cores, a lane file beside two others took two to three
 * times as long as alone. So every file outside the lane runs at a lower CPU priority (nice 10: the
 * scheduler then gives it what the lane leaves, and the lane close to what it would have alone); the
 * processes it starts (workers, the CLI) inherit it. Raising one's own niceness needs no privilege; a
 * process that cannot is left as it is.
 */
const OUTSIDE_LANE_NICENESS = 10;
const file = expect.getState().testPath;
if (file !== undefined) {
  // A lane file in a fork a file outside the lane lowered (forks are not reused across files by default)
  // goes back up when it may.
  const wanted = laneOfFile(file) === null ? OUTSIDE_LANE_NICENESS : 0;
  if (getPriority() !== wanted) {
    try {
      setPriority(wanted);
    } catch {
      // Not allowed here: the file runs at the priority it has.
    }
  }
}
