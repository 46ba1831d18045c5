import type {
  FleetClassBudget,
  FleetClassLedger,
  FleetSlotAnswer,
  FleetWindowReport,
} from '../schemas/fleet-budget.js';

/**
 * The fleet budget's arithmetic, pure and deterministic (the workflow passes its own clock): which requests
 * of a class may go now, for every process of the fleet together, so that no API window counts more than
 * `floor(limit × share)` of them.
 *
 * The API counts fixed windows (spec 8: `X-RateLimit-Reset` is the window's end). A loop that spends a
 * window's budget the moment the window opens beats any pacer that spreads requests evenly (Temporal's
 * task-queue limiter, one second of burst): its first, partial window counts as a whole one. The ledger
 * spends windows the same way, but only windows the server has shown: a window's end is learnt from a
 * response in it (the first request after a window ends is a probe, whose answer names the next end), so
 * servers whose windows start at the first request after a pause are spent as safely as aligned ones.
 *
 * - `X-RateLimit-Reset` is whole seconds: the window may end up to a second before it. A grant must be sent
 *   before `windowEnd - guard`, else it may land in the next window, which is not its own.
 * - Before anything of the new window is known, nothing but the probe goes (`margin` after the end, for
 *   clocks a little apart); a probe whose answer never comes (its process died) is replaced after a while.
 * - The server's own count (`limit - remaining` in a report) replaces ours when it is higher: requests of a
 *   straggler, or of another client of the key, are spent budget too.
 * - A 429 anywhere pauses the class until its Retry-After for every process.
 */

/** Latest a granted request may be sent before the reset the server named (its whole-second rounding). */
const SEND_GUARD_MS = 1250;
/** After a window's end, the probe of the next waits this long (clocks of server and worker apart). */
const START_MARGIN_MS = 250;
/** A probe whose answer has not been reported by then is presumed lost; another is granted. */
export const PROBE_TIMEOUT_MS = 10_000;
/** How soon a process asks again while a probe is out (its answer usually takes one request's time). */
const PROBE_POLL_MS = 100;

export function newLedger(budget: FleetClassBudget): FleetClassLedger {
  return {
    limit: budget.limit,
    cap: budget.limit,
    share: budget.share,
    windowEnd: 0,
    spent: 0,
    probeAt: null,
    pausedUntil: 0,
  };
}

/** Requests of a window the fleet may spend (at least one, or nothing would ever go). */
export function windowBudget(ledger: FleetClassLedger): number {
  return Math.max(1, Math.floor(ledger.limit * ledger.share + 1e-9));
}

/** The guard and margin for a window of `windowMs` (compressed windows in tests get a fraction of it). */
function edges(windowMs: number): { guard: number; margin: number } {
  return { guard: Math.min(SEND_GUARD_MS, windowMs / 4), margin: Math.min(START_MARGIN_MS, windowMs / 20) };
}

/**
 * Grants up to `want` requests at `now`, updating `ledger` in place; or none, with when to ask again.
 * `windowMs` is the API's window length as configured (only the guard and margin depend on it).
 */
export function grantSlots(
  ledger: FleetClassLedger,
  now: number,
  want: number,
  windowMs: number,
): FleetSlotAnswer {
  const { guard, margin } = edges(windowMs);
  const none = (retryAt: number): FleetSlotAnswer => ({
    granted: 0,
    sendBy: 0,
    retryAt: Math.ceil(retryAt),
    windowEnd: ledger.windowEnd,
    probe: false,
  });
  if (ledger.pausedUntil > now) return none(ledger.pausedUntil);
  if (ledger.windowEnd > 0 && now < ledger.windowEnd - guard) {
    const free = windowBudget(ledger) - ledger.spent;
    if (free <= 0) return none(ledger.windowEnd + margin);
    const granted = Math.min(want, free);
    ledger.spent += granted;
    return {
      granted,
      sendBy: Math.floor(ledger.windowEnd - guard),
      retryAt: now,
      windowEnd: ledger.windowEnd,
      probe: false,
    };
  }
  if (ledger.windowEnd > 0 && now < ledger.windowEnd + margin) return none(ledger.windowEnd + margin);
  // The window the ledger knew is over (or none was ever seen): one request learns the next one's end.
  if (ledger.probeAt !== null && now < ledger.probeAt + PROBE_TIMEOUT_MS) return none(now + PROBE_POLL_MS);
  ledger.probeAt = now;
  return {
    granted: 1,
    sendBy: now + PROBE_TIMEOUT_MS,
    retryAt: now,
    windowEnd: ledger.windowEnd,
    probe: true,
  };
}

/** Takes in what a process saw: the first response of a newer window, or a 429. */
export function applyReport(ledger: FleetClassLedger, report: FleetWindowReport): void {
  // A server that did not count the request it answered (remaining = limit: limits off) names a limit it
  // does not enforce: it only ends the probe.
  if (report.rateLimitedUntil === undefined && report.remaining >= report.limit) {
    ledger.probeAt = null;
    return;
  }
  ledger.limit = Math.min(report.limit, ledger.cap);
  // What the server counted in the window, whatever its limit.
  const counted = Math.max(0, report.limit - report.remaining);
  if (report.windowEnd > ledger.windowEnd) {
    ledger.windowEnd = report.windowEnd;
    ledger.spent = counted;
    ledger.probeAt = null;
  } else if (report.windowEnd === ledger.windowEnd) {
    ledger.spent = Math.max(ledger.spent, counted);
  }
  if (report.rateLimitedUntil !== undefined) {
    ledger.pausedUntil = Math.max(ledger.pausedUntil, report.rateLimitedUntil);
    ledger.probeAt = null;
  }
}
