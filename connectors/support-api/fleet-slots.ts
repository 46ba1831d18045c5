/**
 * A process's side of the fleet budget (workflows/fleet-budget.ts): before a request of a covered route
 * class goes, it takes a slot the fleet's ledger granted. Slots come in batches (one question for every
 * request of the class waiting in this process, one question in flight per class), are spent before the
 * `sendBy` they came with, and what a response shows that the ledger does not know yet (the first response
 * of a new window, a 429) is reported back.
 *
 * The ledger lives in Temporal; this module only knows it through `FleetSlotSource`, so it is tested with a
 * ledger in memory (test/connector/fleet-budget.test.ts).
 */
import type { FleetSlotAnswer, FleetSlotRequest, FleetWindowReport } from '../../schemas/fleet-budget.js';
import type { Clock } from './clock.js';
import { RateLimitedError } from './errors.js';
import type { RouteClass } from './route-classes.js';

export interface FleetSlotSource {
  acquire(request: FleetSlotRequest): Promise<FleetSlotAnswer>;
  /** Fire and forget: a lost report costs at most a probe's timeout. */
  report(report: FleetWindowReport): void;
}

/** What the governor saw in a response of a covered class. */
export interface FleetObservation {
  /** Rate-limit headers, when the response had them (epoch ms for the reset). */
  window: { windowEnd: number; limit: number; remaining: number } | undefined;
  /** The server did not count the request it answered (limits off): the governor's own verdict. */
  uncounted: boolean;
  /** A 429: until when the class is paused (its Retry-After as an instant). */
  rateLimitedUntil: number | undefined;
}

interface ClassSlots {
  tokens: number;
  sendBy: number;
  retryAt: number;
  /** The window end the ledger knows (from its answers and our reports). */
  ledgerWindowEnd: number;
  /** A probe slot was spent and its answer not yet reported. */
  probeOut: boolean;
  /**
   * The server's last answer did not count our request (`remaining` still equals `limit`: limits off, as
   * the companion runs them in tests): nothing to budget until it counts again.
   */
  unmetered: boolean;
  waiting: number;
  asking: Promise<void> | null;
}

export interface FleetSlotsOptions {
  source: FleetSlotSource;
  classes: readonly RouteClass[];
  clock: Clock;
  /** The configured window and limits, for a probe whose response carries no rate-limit headers. */
  windowMs: number;
  limits: Partial<Record<RouteClass, number>>;
}

export class FleetSlots {
  readonly #source: FleetSlotSource;
  readonly #clock: Clock;
  readonly #windowMs: number;
  readonly #limits: Partial<Record<RouteClass, number>>;
  readonly #classes = new Map<RouteClass, ClassSlots>();

  constructor(options: FleetSlotsOptions) {
    this.#source = options.source;
    this.#clock = options.clock;
    this.#windowMs = options.windowMs;
    this.#limits = options.limits;
    for (const routeClass of options.classes)
      this.#classes.set(routeClass, {
        tokens: 0,
        sendBy: 0,
        retryAt: 0,
        ledgerWindowEnd: 0,
        probeOut: false,
        unmetered: false,
        waiting: 0,
        asking: null,
      });
  }

  covers(routeClass: RouteClass): boolean {
    return this.#classes.has(routeClass);
  }

  /**
   * Waits for a slot of `routeClass` and takes it. A wait longer than `maxWaitMs` throws `RateLimitedError`
   * with the time to come back (the activity's retry then starts when the budget does).
   */
  async take(
    routeClass: RouteClass,
    options: { maxWaitMs: number; endpoint?: string; signal?: AbortSignal },
  ): Promise<void> {
    const s = this.#slots(routeClass);
    const started = this.#clock.now();
    s.waiting += 1;
    try {
      for (;;) {
        options.signal?.throwIfAborted();
        if (s.unmetered) return;
        const now = this.#clock.now();
        if (s.tokens > 0 && now < s.sendBy) {
          s.tokens -= 1;
          return;
        }
        s.tokens = 0; // what is left after sendBy belongs to a window that is over
        if (s.retryAt > now) {
          const waited = now - started;
          if (waited + (s.retryAt - now) > options.maxWaitMs)
            throw new RateLimitedError({
              endpoint: options.endpoint ?? routeClass,
              routeClass,
              retryAfterMs: s.retryAt - now,
              reason: 'window_exhausted',
            });
          await this.#clock.sleep(s.retryAt - now, options.signal);
          continue;
        }
        s.asking ??= this.#ask(routeClass, s).finally(() => {
          s.asking = null;
        });
        await s.asking;
      }
    } finally {
      s.waiting -= 1;
    }
  }

  async #ask(routeClass: RouteClass, s: ClassSlots): Promise<void> {
    let answer: FleetSlotAnswer;
    try {
      answer = await this.#source.acquire({
        routeClass: routeClass as FleetSlotRequest['routeClass'],
        want: Math.max(1, Math.min(1000, s.waiting)),
      });
    } catch (err) {
      // Temporal unreachable: the page fails and is retried by Temporal (nothing was sent).
      s.retryAt = this.#clock.now() + 1000;
      throw err;
    }
    s.ledgerWindowEnd = Math.max(s.ledgerWindowEnd, answer.windowEnd);
    if (answer.granted > 0) {
      s.tokens = answer.granted;
      s.sendBy = answer.sendBy;
      s.retryAt = 0;
      if (answer.probe) s.probeOut = true;
    } else s.retryAt = answer.retryAt;
  }

  /** A response of a covered class: reports a window the ledger does not know yet, and every 429. */
  observe(routeClass: RouteClass, observation: FleetObservation): void {
    const s = this.#classes.get(routeClass);
    if (!s) return;
    const window =
      observation.window ??
      // A probe answered without rate-limit headers: assume a window of the configured size from now.
      (s.probeOut
        ? {
            windowEnd: this.#clock.now() + this.#windowMs,
            limit: this.#limits[routeClass] ?? 1,
            remaining: Math.max(0, (this.#limits[routeClass] ?? 1) - 1),
          }
        : undefined);
    if (!window) return;
    if (observation.uncounted) {
      // Tell the ledger only to end a probe; the limit such a server names is not one it enforces.
      if (s.probeOut) this.#report(routeClass, window, undefined);
      s.probeOut = false;
      s.unmetered = true;
      return;
    }
    s.unmetered = false;
    const limited = observation.rateLimitedUntil;
    if (window.windowEnd <= s.ledgerWindowEnd && limited === undefined) return;
    s.ledgerWindowEnd = Math.max(s.ledgerWindowEnd, window.windowEnd);
    s.probeOut = false;
    if (limited !== undefined) {
      s.retryAt = Math.max(s.retryAt, limited);
      s.tokens = 0;
    }
    this.#report(routeClass, window, limited);
  }

  #report(
    routeClass: RouteClass,
    window: { windowEnd: number; limit: number; remaining: number },
    limited: number | undefined,
  ): void {
    this.#source.report({
      routeClass: routeClass as FleetWindowReport['routeClass'],
      windowEnd: Math.round(window.windowEnd),
      limit: Math.max(1, Math.round(window.limit)),
      remaining: Math.max(0, Math.round(window.remaining)),
      ...(limited !== undefined ? { rateLimitedUntil: Math.round(limited) } : {}),
    });
  }

  #slots(routeClass: RouteClass): ClassSlots {
    const s = this.#classes.get(routeClass);
    if (!s) throw new Error(`the fleet budget does not cover route class ${routeClass}`);
    return s;
  }
}
