/**
 * Rate governor: spends each route class's budget (spec 8) evenly across the server's window.
 *
 * - Starts from the spec's limits; from the first response on it follows `X-RateLimit-Limit`,
 *   `X-RateLimit-Remaining` and `X-RateLimit-Reset` (the window length is learnt from the server, never
 *   assumed to be 60 s) — of a success or a 429 only: a redirect or an error may come from a gateway or a
 *   login page in between, and its headers (nothing remaining, a reset a year away) would stop every
 *   request of the class for a stranger's reason. Such an answer only counts as one request spent.
 * - Paces: with `available` requests left before the reset at `resetAt`, the next request goes at
 *   `lastGrant + (resetAt - lastGrant) / (available + 1)`, so a window's budget is spread over the window
 *   instead of burst at its start and then stalled (which a sliding-window server would punish with 429s).
 *   Classes paced elsewhere (`pacedElsewhere`: the worker's, by their task queues) are only kept within
 *   the window's budget.
 * - A server that does not count (its `remaining` still equals `limit` after answering our request, e.g.
 *   limits switched off) is not paced until it counts again.
 * - Before anything is known about a class, one probe request is let through and the others wait for its
 *   headers.
 * - A 429 pauses the class until `Retry-After`, and widens the safety margin after a reset (self-tuning
 *   for servers whose reset timestamp is coarser than their window).
 * - Classes are independent; callers of one class are served first come, first served, and requests in
 *   flight count against the budget until their response is observed (or released).
 * - Optionally keeps the last request(s) of every window back (`reserve`), for a fleet of processes on one
 *   key — with `reserveWhenShared`, only once the server's count shows requests that are not this
 *   process's (a process alone knows every request of its windows and needs no reserve)
 *   key whose counts reach each of them late.
 * - One governor per API key and process: `GovernorRegistry.for(key)` keys by a fingerprint (a hash
 *   prefix) of the key, never by the key itself.
 */
import { createHash } from 'node:crypto';
import type { Secret } from '../../schemas/secret.js';
import { type Clock, systemClock } from './clock.js';
import { RateLimitedError } from './errors.js';
import type { FleetSlots } from './fleet-slots.js';
import { ROUTE_CLASSES, type RouteClass, SPEC_LIMITS } from './route-classes.js';

export type RateDecisionReason = 'ok' | 'paced' | 'window_exhausted' | 'retry_after' | 'probe_in_flight';

/** What the governor would do for the next request of a class: wait `waitMs` (0 = go now), and why. */
export interface RateDecision {
  waitMs: number;
  reason: RateDecisionReason;
}

/** Counters per class for progress displays. */
export interface RateClassStats {
  routeClass: RouteClass;
  requests: number;
  responses: number;
  rateLimited: number;
  waits: number;
  totalWaitMs: number;
  /** Latest limit, remaining and reset the server reported (undefined before the first response). */
  limit: number | undefined;
  remaining: number | undefined;
  resetAt: number | undefined;
  /** Window length learnt from the server (ms). */
  windowMs: number;
  inFlight: number;
  pausedUntil: number | undefined;
}

/** The parts of an HTTP response the governor reads. */
export interface ObservedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

export interface RateGovernorOptions {
  clock?: Clock;
  /** Starting limits per class (default: spec 8, with our documented choices for the unnamed classes). */
  initialLimits?: Partial<Record<RouteClass, { limit: number; windowMs: number }>>;
  /** Extra ms after a reset before the next window's budget is used (default 20; grows after a 429). */
  resetMarginMs?: number;
  /** Fraction of the server's limit to spend (default 1). Lower it to leave room for other processes. */
  utilization?: number;
  /**
   * Requests of each server window this process leaves unspent (default 0). When several processes share
   * a key, each sees the server's `X-RateLimit-Remaining` only in its own responses, a moment late: keeping
   * the window's last request(s) back means a straggler of another process cannot make it a 429. Never
   * more than the limit less one.
   */
  reserve?: number;
  /**
   * Keep the reserve only while the key is seen shared: the server counted more requests in a window than
   * this process made (default false: always). At a limit of 10 a window, a reserve of one is a tenth of
   * the budget, which a process alone on its key does not need.
   */
  reserveWhenShared?: boolean;
  /**
   * Classes whose requests something else already paces evenly (default none): the governor then only
   * keeps each of them within its window's budget and does not spread them over the window itself. The
   * worker's route classes, which the key's budget workflow paces for the whole fleet: two pacers in series
   * at a low limit (10 a minute) would make most analytics pages wait out both — the governor's wait goes
   * back to Temporal as a retry.
   */
  pacedElsewhere?: readonly RouteClass[];
}

export interface AcquireOptions {
  /** Throw `RateLimitedError` instead of waiting longer than this (default: wait as long as needed). */
  maxWaitMs?: number;
  /** Endpoint label for the thrown error. */
  endpoint?: string;
  signal?: AbortSignal;
}

interface ClassState {
  routeClass: RouteClass;
  limit: number;
  windowMs: number;
  /** Server-reported remaining in the window ending at `resetAt`, lowered locally by releases. */
  remaining: number;
  resetAt: number;
  /** False until a response with rate-limit headers was observed. */
  known: boolean;
  /**
   * The server reported `remaining >= limit` in a response: it did not count the very request it answered,
   * so it is not enforcing this class for us (e.g. limits switched off). No pacing until it counts again.
   */
  unenforced: boolean;
  /** Whether `windowMs` was measured between two server resets (else estimated from the first one). */
  windowFromGap: boolean;
  /** The window whose reset we saw last from the server (to ignore stale, out-of-order responses). */
  serverResetAt: number;
  inFlight: number;
  /** Responses to this process's requests in the server's window `serverResetAt`. */
  ownInWindow: number;
  /** Until when the key counts as shared with other clients (the server counted requests not ours). */
  sharedUntil: number;
  /** When the window was last rolled over locally (a 429 soon after means our reset was early). */
  rolledAt: number;
  lastGrantAt: number;
  pausedUntil: number;
  marginMs: number;
  tail: Promise<unknown>;
  wake: Array<() => void>;
  stats: { requests: number; responses: number; rateLimited: number; waits: number; totalWaitMs: number };
}

/** How long (in windows) a key seen shared keeps the reserve after the last sign of another client. */
const SHARED_MEMORY_WINDOWS = 10;

const HEADER_LIMIT = 'x-ratelimit-limit';
const HEADER_REMAINING = 'x-ratelimit-remaining';
const HEADER_RESET = 'x-ratelimit-reset';

function header(headers: ObservedResponse['headers'], name: string): string | undefined {
  const v = headers[name] ?? headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}

function numberHeader(headers: ObservedResponse['headers'], name: string): number | undefined {
  const raw = header(headers, name);
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * `X-RateLimit-Reset` as epoch ms. The spec says "Unix timestamp" (seconds; fractions accepted); values
 * that are clearly epoch ms are taken as such, and small values (< 1e9) as seconds from now, which some
 * gateways send.
 */
export function parseResetHeader(value: number, now: number): number {
  if (value > 1e11) return value;
  if (value < 1e9) return now + value * 1000;
  return value * 1000;
}

/** `Retry-After` in ms: delta seconds or an HTTP date. */
export function parseRetryAfter(raw: string | undefined, now: number): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const n = Number(raw);
  if (Number.isFinite(n)) return Math.max(0, n * 1000);
  const date = Date.parse(raw);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/** How many rate windows one server-named wait may cost at most (`Retry-After`, `X-RateLimit-Reset`). */
export const SERVER_WAIT_CAP_WINDOWS = 3;

/** A server-named wait longer than the cap, as it was asked for. */
export interface ClampedWait {
  /** `retry-after`, `x-ratelimit-reset` or the envelope's `retry_after`. */
  source: string;
  askedMs: number;
}

/**
 * The response with every wait the server names cut to `capMs` from now: `Retry-After` and the envelope's
 * `retry_after` (seconds), `X-RateLimit-Reset` (a reset further away than the cap becomes now + cap). A
 * server's word on waiting is followed, but not beyond a few windows: one `Retry-After: 999999` would
 * otherwise stop a route class for eleven days, and a reset far in the future made a window never end.
 */
export function capServerWaits(
  response: ObservedResponse,
  json: unknown,
  now: number,
  capMs: number,
): { headers: ObservedResponse['headers']; json: unknown; clamped: ClampedWait[] } {
  const clamped: ClampedWait[] = [];
  const headers = { ...response.headers };
  const retryAfter = parseRetryAfter(header(headers, 'retry-after'), now);
  if (retryAfter !== undefined && retryAfter > capMs) {
    clamped.push({ source: 'retry-after', askedMs: retryAfter });
    headers['retry-after'] = String(capMs / 1000);
  }
  const reset = numberHeader(headers, HEADER_RESET);
  if (reset !== undefined && parseResetHeader(reset, now) - now > capMs) {
    clamped.push({ source: HEADER_RESET, askedMs: parseResetHeader(reset, now) - now });
    headers[HEADER_RESET] = String((now + capMs) / 1000);
  }
  const envelope = json as { retry_after?: unknown } | null;
  const inBody = typeof envelope === 'object' && envelope !== null ? envelope.retry_after : undefined;
  if (typeof inBody === 'number' && inBody * 1000 > capMs) {
    clamped.push({ source: 'retry_after', askedMs: inBody * 1000 });
    return { headers, json: { ...envelope, retry_after: capMs / 1000 }, clamped };
  }
  return { headers, json, clamped };
}

export class RateGovernor {
  readonly #clock: Clock;
  readonly #states = new Map<RouteClass, ClassState>();
  readonly #baseMarginMs: number;
  readonly #utilization: number;
  readonly #reserve: number;
  readonly #reserveWhenShared: boolean;
  readonly #pacedElsewhere: ReadonlySet<RouteClass>;
  #fleet: { slots: FleetSlots; maxWaitMs: number } | undefined;

  constructor(options: RateGovernorOptions = {}) {
    this.#clock = options.clock ?? systemClock;
    this.#baseMarginMs = options.resetMarginMs ?? 20;
    this.#utilization = Math.min(1, Math.max(0.01, options.utilization ?? 1));
    this.#reserve = Math.max(0, Math.floor(options.reserve ?? 0));
    this.#reserveWhenShared = options.reserveWhenShared ?? false;
    this.#pacedElsewhere = new Set(options.pacedElsewhere ?? []);
    for (const routeClass of ROUTE_CLASSES) {
      const start = options.initialLimits?.[routeClass] ?? SPEC_LIMITS[routeClass];
      this.#states.set(routeClass, {
        routeClass,
        limit: start.limit,
        windowMs: start.windowMs,
        remaining: start.limit,
        resetAt: 0,
        known: false,
        unenforced: false,
        windowFromGap: false,
        serverResetAt: 0,
        inFlight: 0,
        ownInWindow: 0,
        sharedUntil: 0,
        rolledAt: Number.NEGATIVE_INFINITY,
        lastGrantAt: Number.NEGATIVE_INFINITY,
        pausedUntil: 0,
        marginMs: this.#baseMarginMs,
        tail: Promise.resolve(),
        wake: [],
        stats: { requests: 0, responses: 0, rateLimited: 0, waits: 0, totalWaitMs: 0 },
      });
    }
  }

  #state(routeClass: RouteClass): ClassState {
    const s = this.#states.get(routeClass);
    if (!s) throw new Error(`unknown route class ${routeClass}`);
    return s;
  }

  /** Rolls the window over locally once its reset has passed (the server's next window is assumed full). */
  #roll(s: ClassState, now: number): void {
    if (!s.known || now < s.resetAt + s.marginMs) return;
    s.remaining = s.limit;
    s.rolledAt = now;
    // Predict the next reset; the first response of the new window replaces the prediction.
    const periods = Math.max(1, Math.ceil((now - s.resetAt) / s.windowMs));
    s.resetAt += periods * s.windowMs;
  }

  /** The decision for the next request of `routeClass` now, without taking a slot. */
  decide(routeClass: RouteClass): RateDecision {
    const s = this.#state(routeClass);
    const now = this.#clock.now();
    this.#roll(s, now);
    if (s.pausedUntil > now) return { waitMs: s.pausedUntil - now, reason: 'retry_after' };
    if (!s.known) {
      if (s.inFlight > 0) return { waitMs: Number.POSITIVE_INFINITY, reason: 'probe_in_flight' };
      return { waitMs: 0, reason: 'ok' };
    }
    if (s.unenforced) return { waitMs: 0, reason: 'ok' };
    const budget = Math.floor(s.limit * this.#utilization) - (s.limit - s.remaining);
    const shared = !this.#reserveWhenShared || s.sharedUntil > now;
    // Under the fleet budget the fleet's ledger counts every request of the window: no reserve is needed.
    const fleetCounted = this.#fleet?.slots.covers(s.routeClass) ?? false;
    const reserve = shared && !fleetCounted ? Math.min(this.#reserve, s.limit - 1) : 0;
    const available = Math.min(s.remaining - reserve, budget) - s.inFlight;
    if (available <= 0)
      return { waitMs: Math.max(1, s.resetAt + s.marginMs - now), reason: 'window_exhausted' };
    if (this.#pacedElsewhere.has(s.routeClass)) return { waitMs: 0, reason: 'ok' };
    const span = s.resetAt - s.lastGrantAt;
    const nextAt = Number.isFinite(span) ? s.lastGrantAt + span / (available + 1) : now;
    if (nextAt > now) return { waitMs: Math.ceil(nextAt - now), reason: 'paced' };
    return { waitMs: 0, reason: 'ok' };
  }

  /**
   * Lets the fleet budget (connectors/support-api/fleet-slots.ts) decide when requests of the classes it
   * covers go: each first takes a slot the fleet's ledger granted, waiting for it up to `maxWaitMs` (it
   * holds its activity meanwhile: the budget comes back within a window, and a retry through Temporal
   * would only queue again). This process's own view (a window it saw spent, a Retry-After) still holds.
   */
  useFleet(slots: FleetSlots, maxWaitMs: number): void {
    this.#fleet = { slots, maxWaitMs };
  }

  /**
   * Waits for a slot of `routeClass` and takes it. Resolves with the total wait and the last reason. With
   * `maxWaitMs`, a longer wait throws `RateLimitedError` (for activities that let Temporal do the waiting).
   */
  async acquire(routeClass: RouteClass, options: AcquireOptions = {}): Promise<RateDecision> {
    const s = this.#state(routeClass);
    const fleet = this.#fleet;
    const fleetStarted = this.#clock.now();
    // Outside the per-class queue below: every request waiting for the fleet is counted in one question.
    if (fleet?.slots.covers(routeClass))
      await fleet.slots.take(routeClass, {
        maxWaitMs: fleet.maxWaitMs,
        ...(options.endpoint ? { endpoint: options.endpoint } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    const fleetWait = this.#clock.now() - fleetStarted;
    const run = s.tail.then(() => this.#acquireNow(s, options));
    s.tail = run.catch(() => undefined);
    const decision = await run;
    if (fleetWait <= 0) return decision;
    this.#recordWait(s, fleetWait);
    return { waitMs: decision.waitMs + fleetWait, reason: decision.waitMs > 0 ? decision.reason : 'paced' };
  }

  async #acquireNow(s: ClassState, options: AcquireOptions): Promise<RateDecision> {
    let waited = 0;
    let reason: RateDecisionReason = 'ok';
    for (;;) {
      options.signal?.throwIfAborted();
      const d = this.decide(s.routeClass);
      if (d.waitMs <= 0) break;
      reason = d.reason;
      // A probe in flight answers within one request's time: wait for it (up to maxWaitMs) rather than
      // throwing, or every concurrent caller at a process's start fails its activity for a 1 s retry.
      const probeWait = d.reason === 'probe_in_flight' && options.maxWaitMs !== undefined;
      if (probeWait && waited >= options.maxWaitMs!) {
        this.#recordWait(s, waited);
        throw new RateLimitedError({
          endpoint: options.endpoint ?? s.routeClass,
          routeClass: s.routeClass,
          retryAfterMs: 1000,
          reason: d.reason,
        });
      }
      if (!probeWait && options.maxWaitMs !== undefined && d.waitMs > options.maxWaitMs) {
        if (waited > 0) this.#recordWait(s, waited);
        throw new RateLimitedError({
          endpoint: options.endpoint ?? s.routeClass,
          routeClass: s.routeClass,
          retryAfterMs: Number.isFinite(d.waitMs) ? d.waitMs : 1000,
          reason: d.reason,
        });
      }
      const started = this.#clock.now();
      if (probeWait) {
        // Bounded by the clock (a fake one in tests): the probe's answer, or maxWaitMs in all.
        const timeout = new AbortController();
        await Promise.race([
          this.#waitForChange(s, options.signal),
          this.#clock.sleep(Math.max(1, options.maxWaitMs! - waited), timeout.signal).catch(() => undefined),
        ]);
        timeout.abort();
      } else if (d.reason === 'probe_in_flight') await this.#waitForChange(s, options.signal);
      else await this.#clock.sleep(d.waitMs, options.signal);
      waited += this.#clock.now() - started;
    }
    if (waited > 0) this.#recordWait(s, waited);
    s.inFlight += 1;
    s.lastGrantAt = this.#clock.now();
    s.stats.requests += 1;
    return { waitMs: waited, reason };
  }

  #recordWait(s: ClassState, ms: number): void {
    s.stats.waits += 1;
    s.stats.totalWaitMs += ms;
  }

  #waitForChange(s: ClassState, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => reject(signal?.reason ?? new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      s.wake.push(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  #notify(s: ClassState): void {
    const wake = s.wake.splice(0);
    for (const w of wake) w();
  }

  /**
   * Records a response of `routeClass`: the rate-limit headers of a success or a 429 (another answer's
   * only count as one request spent), and a 429's `Retry-After`.
   */
  observe(routeClass: RouteClass, response: ObservedResponse): void {
    const s = this.#state(routeClass);
    const now = this.#clock.now();
    s.inFlight = Math.max(0, s.inFlight - 1);
    s.stats.responses += 1;
    const limit = numberHeader(response.headers, HEADER_LIMIT);
    const remaining = numberHeader(response.headers, HEADER_REMAINING);
    const resetRaw = numberHeader(response.headers, HEADER_RESET);
    const accounts = (response.status >= 200 && response.status < 300) || response.status === 429;
    if (!accounts && s.known) s.remaining = Math.max(0, s.remaining - 1);
    const window =
      accounts && limit !== undefined && remaining !== undefined && resetRaw !== undefined && limit > 0
        ? { windowEnd: parseResetHeader(resetRaw, now), limit, remaining }
        : undefined;
    // A counted request leaves remaining <= limit - 1; a server that leaves it at the limit does not count.
    const uncounted = window !== undefined && window.remaining >= window.limit && response.status !== 429;
    if (window && limit !== undefined && remaining !== undefined) {
      const resetAt = window.windowEnd;
      if (resetAt > s.serverResetAt) {
        // A newer window. Its length: from the previous server reset, or from now for the first one seen.
        if (s.serverResetAt > 0) {
          const gap = resetAt - s.serverResetAt;
          // Windows that start on the first request after a pause are further apart than one window, so
          // after the first gap only a shorter gap replaces the estimate.
          if (!s.windowFromGap || gap < s.windowMs) s.windowMs = gap;
          s.windowFromGap = true;
        } else if (!s.known) {
          s.windowMs = Math.max(1, resetAt - now);
        }
        s.serverResetAt = resetAt;
        s.resetAt = resetAt;
        s.remaining = remaining;
        s.ownInWindow = 1;
      } else if (resetAt === s.serverResetAt) {
        s.remaining = Math.min(s.remaining, remaining);
        s.resetAt = resetAt;
        s.ownInWindow += 1;
      }
      // More requests counted in this window than ours (answered or still in flight): another process or
      // client spends the key too. Remembered for a few windows (the fleet keeps running).
      if (resetAt === s.serverResetAt && limit - remaining > s.ownInWindow + s.inFlight)
        s.sharedUntil = now + SHARED_MEMORY_WINDOWS * s.windowMs;
      s.limit = limit;
      s.known = true;
      // Only a response of the current window says whether the server counts.
      if (resetAt >= s.serverResetAt) s.unenforced = uncounted;
    }
    let rateLimitedUntil: number | undefined;
    if (response.status === 429) {
      s.unenforced = false;
      s.sharedUntil = now + SHARED_MEMORY_WINDOWS * s.windowMs;
      s.stats.rateLimited += 1;
      const retryAfter = parseRetryAfter(header(response.headers, 'retry-after'), now);
      rateLimitedUntil = now + (retryAfter ?? Math.max(1000, s.resetAt - now));
      s.pausedUntil = Math.max(s.pausedUntil, rateLimitedUntil);
      s.remaining = 0;
      // A 429 right after we rolled the window over means the server's window ends later than its reset
      // header said (coarse or skewed): wait longer after resets from now on. A 429 elsewhere in the
      // window is another consumer of the key; the margin would not help there.
      if (now - s.rolledAt < s.marginMs + 500) s.marginMs = Math.min(1000, s.marginMs * 2 + 50);
    }
    this.#fleet?.slots.observe(routeClass, { window, uncounted, rateLimitedUntil });
    this.#notify(s);
  }

  /** Gives back a slot whose request got no response (network error, timeout). Counted as spent. */
  release(routeClass: RouteClass): void {
    const s = this.#state(routeClass);
    s.inFlight = Math.max(0, s.inFlight - 1);
    if (s.known) s.remaining = Math.max(0, s.remaining - 1);
    this.#notify(s);
  }

  /** Pauses a class until `untilMs` (epoch ms), e.g. from a 429 seen elsewhere. */
  pause(routeClass: RouteClass, untilMs: number): void {
    const s = this.#state(routeClass);
    s.pausedUntil = Math.max(s.pausedUntil, untilMs);
  }

  stats(): RateClassStats[] {
    return [...this.#states.values()].map((s) => this.classStats(s.routeClass));
  }

  classStats(routeClass: RouteClass): RateClassStats {
    const s = this.#state(routeClass);
    return {
      routeClass,
      ...s.stats,
      limit: s.known ? s.limit : undefined,
      remaining: s.known ? s.remaining : undefined,
      resetAt: s.known ? s.resetAt : undefined,
      windowMs: s.windowMs,
      inFlight: s.inFlight,
      pausedUntil: s.pausedUntil > this.#clock.now() ? s.pausedUntil : undefined,
    };
  }
}

/** A short, non-reversible fingerprint of an API key (first 16 hex chars of its SHA-256). */
export function keyFingerprint(key: Secret): string {
  return createHash('sha256').update(key.reveal()).digest('hex').slice(0, 16);
}

/** One governor per key fingerprint, so every client of a process using that key shares one budget. */
export class GovernorRegistry {
  readonly #governors = new Map<string, RateGovernor>();
  constructor(private readonly options: RateGovernorOptions = {}) {}
  for(key: Secret): RateGovernor {
    return this.forFingerprint(keyFingerprint(key));
  }
  forFingerprint(fingerprint: string): RateGovernor {
    let g = this.#governors.get(fingerprint);
    if (!g) {
      g = new RateGovernor(this.options);
      this.#governors.set(fingerprint, g);
    }
    return g;
  }
}

/** The process-wide registry the client uses unless given a governor. */
export const sharedGovernors = new GovernorRegistry();
