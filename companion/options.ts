import type { FaultOptions } from './http/faults.js';
import type { RouteClass } from './http/rate-limit.js';

export interface CompanionOptions {
  /** World seed (default 7). */
  seed?: number;
  /** Tickets in org A (default 300). */
  tickets?: number;
  /** 0 = a free port (default). */
  port?: number;
  host?: string;
  /** The companion clock; the world is generated relative to it (default real time). */
  now?: () => Date;
  rateLimits?: boolean;
  rateLimitWindowMs?: number;
  rateLimitOverrides?: Partial<Record<RouteClass, number>>;
  /** Writes become visible to reads after this many ms (default 0). */
  replicaLagMs?: number;
  faults?: FaultOptions;
  /** False = new messages leave `ticket.updated_at` alone (default true). */
  messageBumpsTicketUpdatedAt?: boolean;
  /** pino level for stderr logs (default `silent` for the handle, `info` for the CLI). */
  logLevel?: string;
  /**
   * Variant world: every shape the spec leaves open ("not shown", "for example", "possibly others", "can contain
   * more") takes another reading on a deterministic share of items (companion/variant.ts, README "Variant
   * worlds"). 0 or undefined = the default world, byte for byte. Fixed for the companion's life.
   */
  variant?: number;
  /** Time a message send spends "processing" before it is recorded (default 25 ms; idempotency rule 4). */
  sendDelayMs?: number;
  /**
   * Live mode: every `intervalMs` the world changes as a real workspace does (`changesPerTick` changes, 3 by
   * default; see world/live.ts). Off by default; `handle.live.tick()` applies changes on demand either way.
   */
  live?: {
    intervalMs: number;
    changesPerTick?: number;
    /**
     * The world lived since this instant: it is generated as of then and every round due since (one per
     * `intervalMs`) is applied at its own time before the server listens, so a companion restarted with the
     * same seed serves the workspace it would have become had it run all along (the demo's warehouse stays
     * comparable between starts). At most 20,000 rounds are caught up.
     */
    since?: Date;
  };
}

/** Options that can be switched while running (`handle.setOptions`). */
export type RuntimeOptions = Pick<
  Required<CompanionOptions>,
  'rateLimits' | 'rateLimitWindowMs' | 'replicaLagMs' | 'messageBumpsTicketUpdatedAt' | 'sendDelayMs'
> & { faults: FaultOptions | undefined; rateLimitOverrides: Partial<Record<RouteClass, number>> };
