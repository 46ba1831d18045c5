/**
 * Route classes. The first four are spec 8; the rest are our choice where the spec says "not shown"
 * (see companion/README.md).
 */
export const ROUTE_CLASSES = [
  'list',
  'detail',
  'write',
  'analytics',
  'directory',
  'attachments',
  'ticket_update',
  'legacy',
] as const;
export type RouteClass = (typeof ROUTE_CLASSES)[number];

export const DEFAULT_LIMITS: Record<RouteClass, number> = {
  list: 60,
  detail: 120,
  write: 30,
  analytics: 10,
  directory: 60,
  attachments: 30,
  ticket_update: 30,
  legacy: 30,
};

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds of the window's reset. */
  reset: number;
  retryAfterSeconds: number;
}

/**
 * Fixed windows per (route class, identity), aligned to multiples of the window length on the real clock.
 * Identity is the key label, or the client IP without a valid key (spec 8).
 */
export class RateLimiter {
  readonly #buckets = new Map<string, { start: number; count: number }>();
  constructor(
    private readonly config: () => { enabled: boolean; windowMs: number; limits: Record<RouteClass, number> },
    private readonly realNow: () => number = Date.now,
  ) {}

  take(routeClass: RouteClass, identity: string): RateDecision {
    const { enabled, windowMs, limits } = this.config();
    const limit = limits[routeClass];
    const now = this.realNow();
    const start = Math.floor(now / windowMs) * windowMs;
    const resetMs = start + windowMs;
    const reset = Math.ceil(resetMs / 1000);
    const retryAfterSeconds = Math.max(1, Math.ceil((resetMs - now) / 1000));
    if (!enabled) return { allowed: true, limit, remaining: limit, reset, retryAfterSeconds };
    const id = `${routeClass}|${identity}`;
    let b = this.#buckets.get(id);
    if (!b || b.start !== start) {
      b = { start, count: 0 };
      this.#buckets.set(id, b);
    }
    if (b.count >= limit) return { allowed: false, limit, remaining: 0, reset, retryAfterSeconds };
    b.count++;
    return { allowed: true, limit, remaining: limit - b.count, reset, retryAfterSeconds };
  }

  clear(): void {
    this.#buckets.clear();
  }
}
