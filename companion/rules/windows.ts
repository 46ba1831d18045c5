import { MAX_EXPORT_WINDOW_MS } from '../../schemas/api/index.js';
import { validation } from '../http/errors.js';
import { parseInstantUs } from '../http/instants.js';

/** A half-open window `[fromUs, beforeUs)` in epoch microseconds. */
export interface WindowUs {
  fromUs: number;
  beforeUs: number;
}

/** Rules 2–3 of spec 4.13 / 4.14: positive, at most 90 × 24 h. */
export function parseWindow(from: string, before: string, names: [string, string]): WindowUs {
  const fromUs = parseInstantUs(from, names[0]);
  const beforeUs = parseInstantUs(before, names[1]);
  if (beforeUs <= fromUs) throw validation(`${names[1]} must be later than ${names[0]}`);
  if (beforeUs - fromUs > MAX_EXPORT_WINDOW_MS * 1000) {
    throw validation(`the window from ${names[0]} to ${names[1]} exceeds 90 × 24 hours`);
  }
  return { fromUs, beforeUs };
}

/** `[from, before)` membership. */
export function inWindow(us: number, w: WindowUs): boolean {
  return us >= w.fromUs && us < w.beforeUs;
}

/** Spec 4.14 selection: `session_start < before` and (`session_end > from` or open). Times in µs. */
export function overlaps(startUs: number, endUs: number | null, w: WindowUs): boolean {
  return startUs < w.beforeUs && (endUs === null || endUs > w.fromUs);
}
