/**
 * Window planner for the exports (spec 4.13, 4.14): half-open windows `[windowStart, windowEnd)` of at
 * most 90×24 h, as ISO instants with `Z`. Adjacent windows share their boundary exactly (spec 4.14
 * pagination rule 3: "reuse the previous `before` as the next `from`"); there are no gaps and none is
 * longer than the limit. A look-back extends the first window's start backwards (re-reading late survey
 * answers, sessions that changed, replica lag); the extension is itself split so no window exceeds the limit.
 */
import { MAX_EXPORT_WINDOW_MS } from '../../schemas/api/exports.js';

export interface Window {
  /** Inclusive start, ISO 8601 with `Z`. */
  windowStart: string;
  /** Exclusive end, ISO 8601 with `Z`. */
  windowEnd: string;
}

export interface PlanOptions {
  from: Date | string | number;
  to: Date | string | number;
  /** Longest window in ms (default and maximum: 90×24 h). */
  maxWindowMs?: number;
  /** Extends the first window's start backwards by this many ms (default 0). */
  lookBackMs?: number;
  /** Refuse plans with more windows than this (default 100,000): a unit mix-up, not a real backfill. */
  maxWindows?: number;
}

function toMs(v: Date | string | number, name: string): number {
  const ms = v instanceof Date ? v.getTime() : typeof v === 'number' ? v : Date.parse(v);
  if (!Number.isFinite(ms)) throw new RangeError(`${name} is not a valid instant: ${String(v)}`);
  if (typeof v === 'string' && !/(Z|[+-]\d{2}:?\d{2})$/i.test(v.trim())) {
    throw new RangeError(`${name} must carry Z or an explicit offset: ${v}`);
  }
  return ms;
}

/** Splits `[from - lookBack, to)` into consecutive windows of at most `maxWindowMs`. Empty if `from >= to`. */
export function planWindows(options: PlanOptions): Window[] {
  const max = options.maxWindowMs ?? MAX_EXPORT_WINDOW_MS;
  if (!Number.isInteger(max) || max <= 0 || max > MAX_EXPORT_WINDOW_MS) {
    throw new RangeError(`maxWindowMs must be an integer in (0, ${MAX_EXPORT_WINDOW_MS}]`);
  }
  const lookBack = options.lookBackMs ?? 0;
  if (!Number.isFinite(lookBack) || lookBack < 0) throw new RangeError('lookBackMs must be >= 0');
  const start = toMs(options.from, 'from') - lookBack;
  const end = toMs(options.to, 'to');
  const count = Math.ceil((end - start) / max);
  if (count > (options.maxWindows ?? 100_000)) {
    throw new RangeError(`plan of ${count} windows exceeds maxWindows; check the units of maxWindowMs`);
  }
  const windows: Window[] = [];
  for (let s = start; s < end; ) {
    const e = Math.min(s + max, end);
    windows.push({ windowStart: new Date(s).toISOString(), windowEnd: new Date(e).toISOString() });
    s = e;
  }
  return windows;
}

/** The window's length in ms. */
export function windowLengthMs(w: Window): number {
  return Date.parse(w.windowEnd) - Date.parse(w.windowStart);
}
