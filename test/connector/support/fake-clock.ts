import type { Clock } from '../../../connectors/support-api/clock.js';

/** Virtual time: `sleep` registers a timer; `run(task)` advances to the next timer whenever all is idle. */
export class FakeClock implements Clock {
  #now: number;
  #timers: Array<{ at: number; seq: number; resolve: () => void }> = [];
  #seq = 0;
  constructor(start = Date.parse('2025-01-01T00:00:00Z')) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.#timers.push({ at: this.#now + ms, seq: this.#seq++, resolve });
    });
  }
  advance(ms: number): void {
    this.#now += ms;
  }
  /** Runs `task` to completion, jumping virtual time forward whenever only timers are pending. */
  async run<T>(task: Promise<T>): Promise<T> {
    let done = false;
    let failed = false;
    task.then(
      () => {
        done = true;
      },
      () => {
        done = true;
        failed = true;
      },
    );
    for (;;) {
      for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
      if (done) break;
      if (this.#timers.length === 0) throw new Error('deadlock: task pending with no timers');
      this.#timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const t = this.#timers.shift()!;
      this.#now = Math.max(this.#now, t.at);
      t.resolve();
    }
    if (failed) return task;
    return task;
  }
}

/** A fixed-window limiter like a typical API gateway: window starts at the first request after a reset. */
export class FixedWindowServer {
  #windowStart = Number.NEGATIVE_INFINITY;
  #count = 0;
  readonly log: Array<{ at: number; status: number }> = [];
  constructor(
    readonly limit: number,
    readonly windowMs: number,
    readonly resetUnit: 'ms' | 'fractional-s' = 'fractional-s',
  ) {}
  hit(now: number): { status: number; headers: Record<string, string> } {
    if (now >= this.#windowStart + this.windowMs) {
      this.#windowStart = now;
      this.#count = 0;
    }
    const resetAt = this.#windowStart + this.windowMs;
    const reset = this.resetUnit === 'ms' ? String(resetAt) : String(resetAt / 1000);
    const status = this.#count >= this.limit ? 429 : 200;
    if (status === 200) this.#count += 1;
    this.log.push({ at: now, status });
    const headers: Record<string, string> = {
      'x-ratelimit-limit': String(this.limit),
      'x-ratelimit-remaining': String(Math.max(0, this.limit - this.#count)),
      'x-ratelimit-reset': reset,
    };
    if (status === 429) headers['retry-after'] = String(Math.ceil((resetAt - now) / 1000));
    return { status, headers };
  }
}
