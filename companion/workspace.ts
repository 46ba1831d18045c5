import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { App, type RequestLogEntry, type Surface } from './http/app.js';
import type { Route } from './http/context.js';
import { CursorCodec } from './http/cursor.js';
import { FaultInjector } from './http/faults.js';
import { DEFAULT_LIMITS, RateLimiter, type RouteClass } from './http/rate-limit.js';
import type { RuntimeOptions, WorkspaceOptions } from './options.js';
import { attachmentRoutes, fileRoutes, uploadRoutes } from './routes/attachments.js';
import { directoryRoutes } from './routes/directory.js';
import { exportRoutes } from './routes/exports.js';
import { healthRoutes } from './routes/health.js';
import { identityRoutes } from './routes/identity.js';
import { legacySurface } from './routes/legacy.js';
import { messageRoutes } from './routes/messages.js';
import { reportRoutes } from './routes/reports.js';
import { ticketRoutes } from './routes/tickets.js';
import { viewRoutes } from './routes/views.js';
import type { CompanionState } from './state.js';
import { varyEnvelope } from './variant.js';
import { type ApiKeyRecord, generateWorld, type KeyLabel, World } from './world/index.js';
import { type LiveChanges, LiveWorld } from './world/live.js';

/** What a test or a bench holds of one workspace: its keys, world, requests, switches and life. */
export interface WorkspaceHandle {
  /** The workspace's slug (`default` in a companion of one workspace). */
  id: string;
  keys: Record<KeyLabel, string>;
  world: World;
  readonly requestLog: ReadonlyArray<RequestLogEntry>;
  clearRequestLog(): void;
  setOptions(partial: Partial<RuntimeOptions>): void;
  /** The living workspace (option `live`): changes on a timer, or on demand. */
  live: {
    /**
     * Applies `changes` changes (default: the configured changes per tick), stamped `at` (default: now),
     * and says what they were.
     */
    tick(changes?: number, at?: Date): LiveChanges;
    /** Starts (or restarts) the timer: a tick every `intervalMs`. */
    start(intervalMs?: number): void;
    stop(): void;
    readonly running: boolean;
  };
}

/** A workspace as the server mounts it: the pipeline its requests go through, and its handle. */
export interface Workspace {
  handle: WorkspaceHandle;
  app: App;
  state: CompanionState;
  /** Starts the life the options ask for; called once the server listens. */
  begin(): void;
}

/** How the service around a workspace places it. */
export interface Placement {
  /** Companion clock in ms, one for the whole service. */
  now: () => number;
  log: Logger;
  /**
   * True when the workspace is one of several on the port: its keys, cursor and upload secrets are salted with
   * its id (two workspaces of one seed share none of them) and its object store lives under `/<id>`.
   */
  shared: boolean;
}

/** The slug rule of workspace ids (they appear in URL paths and in the warehouse). */
export const WORKSPACE_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Rounds of live changes a restarted companion catches up on at most (see CompanionOptions.live.since). */
const MAX_CATCH_UP_ROUNDS = 20_000;

/**
 * Variant worlds: unknown envelope fields on the success bodies of reads (every GET) and of report queries.
 * Writes keep theirs, so that an idempotent replay stays identical to the first response (spec 4.6 rule 2).
 */
function withVariantEnvelope(variant: number, route: Route): Route {
  if (route.method !== 'GET' && route.path !== '/reports/query') return route;
  return {
    ...route,
    handler: async (ctx) => {
      const reply = await route.handler(ctx);
      if (reply.raw || reply.status < 200 || reply.status >= 300) return reply;
      const path = new URL(ctx.req.url ?? '/', 'http://companion.local').pathname;
      return {
        ...reply,
        body: varyEnvelope(variant, reply.body, { requestId: ctx.requestId, path, query: ctx.query }),
      };
    },
  };
}

/** The API surfaces (v1 and legacy) over a state; the object store's surfaces are the workspace's own. */
export function apiSurfaces(state: CompanionState): Surface[] {
  const v1: Surface = {
    prefix: '/public/v1',
    faults: true,
    routes: [
      ...healthRoutes(state),
      ...identityRoutes(state),
      ...ticketRoutes(state),
      ...messageRoutes(state),
      ...viewRoutes(state),
      ...attachmentRoutes(state),
      ...directoryRoutes(state),
      ...reportRoutes(state),
      ...exportRoutes(state),
    ].map((r) => (state.variant === 0 ? r : withVariantEnvelope(state.variant, r))),
  };
  return [v1, legacySurface(state)];
}

export function rateLimiterOf(runtime: RuntimeOptions): RateLimiter {
  return new RateLimiter(() => ({
    enabled: runtime.rateLimits,
    windowMs: runtime.rateLimitWindowMs,
    limits: { ...DEFAULT_LIMITS, ...runtime.rateLimitOverrides } as Record<RouteClass, number>,
  }));
}

/** A key no other workspace of the service can hold, whatever their seeds: the label stays readable. */
function saltedKey(k: ApiKeyRecord, workspaceId: string): ApiKeyRecord {
  const digest = createHash('sha256').update(`${workspaceId}\n${k.key}`).digest('hex').slice(0, 32);
  return { ...k, key: `sk_${k.label}_${digest}` };
}

export function openWorkspace(options: WorkspaceOptions, place: Placement): Workspace {
  const { id, seed = 7, variant = 0 } = options;
  if (!WORKSPACE_ID.test(id)) throw new Error(`workspace id "${id}" must match ${WORKSPACE_ID}`);
  if (!Number.isInteger(variant) || variant < 0) throw new Error('variant must be a non-negative integer');
  const { now } = place;
  const log = place.shared ? place.log.child({ workspace: id }) : place.log;
  const runtime: RuntimeOptions = {
    rateLimits: options.rateLimits ?? true,
    rateLimitWindowMs: options.rateLimitWindowMs ?? 60_000,
    rateLimitOverrides: options.rateLimitOverrides ?? {},
    replicaLagMs: options.replicaLagMs ?? 0,
    faults: options.faults,
    messageBumpsTicketUpdatedAt: options.messageBumpsTicketUpdatedAt ?? true,
    sendDelayMs: options.sendDelayMs ?? 25,
    sentAfterMs: options.sentAfterMs ?? 5_000,
    deliveredAfterMs: options.deliveredAfterMs ?? 30_000,
  };
  const t0 = performance.now();
  const liveSince = options.live?.since?.getTime();
  const idSpace = options.idSpace ?? (place.shared ? 0 : undefined);
  const data = generateWorld(seed, options.tickets ?? 300, liveSince ?? now(), idSpace);
  if (place.shared) data.keys = data.keys.map((k) => saltedKey(k, id));
  const world = new World(data, {
    now,
    realNow: Date.now,
    get replicaLagMs() {
      return runtime.replicaLagMs;
    },
    get messageBumpsTicketUpdatedAt() {
      return runtime.messageBumpsTicketUpdatedAt;
    },
  });
  // Among many workspaces one line each would be a line per item: the service logs their sum.
  const generated = { tickets: world.tickets.length, ms: Math.round(performance.now() - t0) };
  if (place.shared) log.debug(generated, 'world generated');
  else log.info(generated, 'world generated');
  const salt = place.shared ? `:${id}` : '';
  const secret = createHash('sha256').update(`companion-secret-${seed}${salt}`).digest('hex');
  const storagePath = place.shared ? `/${id}` : '';
  const state: CompanionState = {
    world,
    cursors: new CursorCodec(`cursor-${secret}`),
    uploadSecret: `upload-${secret}`,
    baseUrl: '',
    storagePath,
    options: runtime,
    attachments: new Map(),
    idempotency: new Map(),
    viewCounts: new Map(),
    log,
    now,
    variant,
  };
  const surfaces: Surface[] = [
    ...apiSurfaces(state),
    { prefix: `/uploads${storagePath}`, faults: false, routes: uploadRoutes(state) },
    { prefix: `/files${storagePath}`, faults: false, routes: fileRoutes(state) },
  ];
  const limiter = rateLimiterOf(runtime);
  const app = new App(state, surfaces, limiter, new FaultInjector(seed));
  const keys = Object.fromEntries(world.keys.map((k) => [k.label, k.key])) as Record<KeyLabel, string>;
  const evolver = new LiveWorld(world, seed);
  const changesPerTick = options.live?.changesPerTick ?? 3;
  let timer: NodeJS.Timeout | undefined;
  let pendingStart: NodeJS.Timeout | undefined;
  const live: WorkspaceHandle['live'] = {
    tick(changes = changesPerTick, at) {
      const changed = evolver.tick(changes, at?.getTime());
      log.info({ counts: changed.counts, tickets: changed.tickets }, 'live: the workspace changed');
      return changed;
    },
    start(intervalMs = options.live?.intervalMs ?? 5000) {
      live.stop();
      timer = setInterval(() => live.tick(), intervalMs);
      timer.unref(); // a living world never keeps the process alive on its own
    },
    stop() {
      if (timer) clearInterval(timer);
      if (pendingStart) clearTimeout(pendingStart);
      timer = undefined;
      pendingStart = undefined;
    },
    get running() {
      return timer !== undefined;
    },
  };
  const begin = () => {
    if (!options.live) return;
    const { intervalMs } = options.live;
    if (liveSince === undefined) {
      live.start(intervalMs);
      return;
    }
    // Catch up on the rounds due since `since`, each at its own time, then keep the same schedule.
    const due = Math.min(Math.floor((now() - liveSince) / intervalMs), MAX_CATCH_UP_ROUNDS);
    for (let k = 1; k <= due; k++) evolver.tick(changesPerTick, liveSince + k * intervalMs);
    if (due > 0) log.info({ rounds: due }, 'live: caught up with the rounds since the world began');
    const next = liveSince + (due + 1) * intervalMs;
    pendingStart = setTimeout(() => live.start(intervalMs), Math.max(0, next - now()));
    pendingStart.unref();
  };
  const handle: WorkspaceHandle = {
    id,
    keys,
    world,
    live,
    get requestLog() {
      return app.requestLog;
    },
    clearRequestLog() {
      app.requestLog.length = 0;
    },
    setOptions(partial) {
      Object.assign(runtime, partial);
      if (partial.rateLimitWindowMs !== undefined || partial.rateLimits !== undefined) limiter.clear();
      state.viewCounts.clear();
    },
  };
  return { handle, app, state, begin };
}
