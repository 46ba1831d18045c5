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
  /**
   * Record ids from this id space instead of the seed (world/ids.ts): worlds of one space share their ids, as
   * the workspaces of a companion serving many do (there every workspace is in space 0 unless it says
   * otherwise). Undefined in a companion of one workspace: the world the seed always gave.
   */
  idSpace?: number;
  /** Time a message send spends "processing" before it is recorded (default 25 ms; idempotency rule 4). */
  sendDelayMs?: number;
  /**
   * Age at which a `queued` reply reads as `sent`, and as `delivered` (companion clock; defaults 5,000 and
   * 30,000 ms): such a reply changes without moving its ticket until then.
   */
  sentAfterMs?: number;
  deliveredAfterMs?: number;
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

/** Settings of the service as a whole, whatever the number of workspaces it serves. */
export type ServiceOptions = Pick<CompanionOptions, 'port' | 'host' | 'now' | 'logLevel'>;

/** One workspace (organization) of a companion serving many: its world, keys, limits, faults and life. */
export interface WorkspaceOptions extends Omit<CompanionOptions, keyof ServiceOptions> {
  /** A slug (`a-z`, `0-9`, `-`, at most 63): the workspace's name in the JSON line, logs and storage paths. */
  id: string;
}

export interface WorkspacesOptions extends ServiceOptions {
  workspaces: WorkspaceOptions[];
  /**
   * Rate limits of requests no workspace's key identifies (a missing or unknown key, `GET /health` without
   * one), keyed by client IP as spec 8 says (default on).
   */
  rateLimits?: boolean;
}

/** Options that can be switched while running (`handle.setOptions`). */
export type RuntimeOptions = Pick<
  Required<CompanionOptions>,
  | 'rateLimits'
  | 'rateLimitWindowMs'
  | 'replicaLagMs'
  | 'messageBumpsTicketUpdatedAt'
  | 'sendDelayMs'
  | 'sentAfterMs'
  | 'deliveredAfterMs'
> & { faults: FaultOptions | undefined; rateLimitOverrides: Partial<Record<RouteClass, number>> };
