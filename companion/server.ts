import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { destination, pino } from 'pino';
import { App, type RequestLogEntry, type Surface } from './http/app.js';
import type { Route } from './http/context.js';
import { CursorCodec } from './http/cursor.js';
import { FaultInjector } from './http/faults.js';
import { DEFAULT_LIMITS, RateLimiter, type RouteClass } from './http/rate-limit.js';
import type { CompanionOptions, RuntimeOptions } from './options.js';
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
import { generateWorld, type KeyLabel, World } from './world/index.js';
import { type LiveChanges, LiveWorld } from './world/live.js';

export interface CompanionHandle {
  /** `http://host:port`, no trailing slash, without `/public/v1`. */
  baseUrl: string;
  keys: Record<KeyLabel, string>;
  world: World;
  readonly requestLog: ReadonlyArray<RequestLogEntry>;
  clearRequestLog(): void;
  setOptions(partial: Partial<RuntimeOptions>): void;
  /** The living workspace (companion option `live`): changes on a timer, or on demand. */
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
  stop(): Promise<void>;
}

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

/** Rounds of live changes a restarted companion catches up on at most (see CompanionOptions.live.since). */
const MAX_CATCH_UP_ROUNDS = 20_000;

export async function startCompanion(options: CompanionOptions = {}): Promise<CompanionHandle> {
  const seed = options.seed ?? 7;
  const variant = options.variant ?? 0;
  if (!Number.isInteger(variant) || variant < 0) throw new Error('variant must be a non-negative integer');
  const clock = options.now ?? (() => new Date());
  const now = () => clock().getTime();
  const runtime: RuntimeOptions = {
    rateLimits: options.rateLimits ?? true,
    rateLimitWindowMs: options.rateLimitWindowMs ?? 60_000,
    rateLimitOverrides: options.rateLimitOverrides ?? {},
    replicaLagMs: options.replicaLagMs ?? 0,
    faults: options.faults,
    messageBumpsTicketUpdatedAt: options.messageBumpsTicketUpdatedAt ?? true,
    sendDelayMs: options.sendDelayMs ?? 25,
  };
  const log = pino({ level: options.logLevel ?? 'silent', base: { svc: 'companion' } }, destination(2));
  const t0 = performance.now();
  const liveSince = options.live?.since?.getTime();
  const data = generateWorld(seed, options.tickets ?? 300, liveSince ?? now());
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
  log.info({ tickets: world.tickets.length, ms: Math.round(performance.now() - t0) }, 'world generated');
  const secret = createHash('sha256').update(`companion-secret-${seed}`).digest('hex');
  const state: CompanionState = {
    world,
    cursors: new CursorCodec(`cursor-${secret}`),
    uploadSecret: `upload-${secret}`,
    baseUrl: '',
    options: runtime,
    attachments: new Map(),
    idempotency: new Map(),
    viewCounts: new Map(),
    log,
    now,
    variant,
  };
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
    ].map((r) => (variant === 0 ? r : withVariantEnvelope(variant, r))),
  };
  const surfaces: Surface[] = [
    v1,
    legacySurface(state),
    { prefix: '/uploads', faults: false, routes: uploadRoutes(state) },
    { prefix: '/files', faults: false, routes: fileRoutes(state) },
  ];
  const limiter = new RateLimiter(() => ({
    enabled: runtime.rateLimits,
    windowMs: runtime.rateLimitWindowMs,
    limits: { ...DEFAULT_LIMITS, ...runtime.rateLimitOverrides } as Record<RouteClass, number>,
  }));
  const app = new App(state, surfaces, limiter, new FaultInjector(seed));
  const server = createServer({ keepAlive: true }, app.handle);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  state.baseUrl = `http://${host}:${port}`;
  log.info({ baseUrl: state.baseUrl }, 'listening');
  const keys = Object.fromEntries(world.keys.map((k) => [k.label, k.key])) as Record<KeyLabel, string>;
  const evolver = new LiveWorld(world, seed);
  const changesPerTick = options.live?.changesPerTick ?? 3;
  let timer: NodeJS.Timeout | undefined;
  let pendingStart: NodeJS.Timeout | undefined;
  const live: CompanionHandle['live'] = {
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
  if (options.live) {
    const { intervalMs } = options.live;
    if (liveSince !== undefined) {
      // Catch up on the rounds due since `since`, each at its own time, then keep the same schedule.
      const due = Math.min(Math.floor((now() - liveSince) / intervalMs), MAX_CATCH_UP_ROUNDS);
      for (let k = 1; k <= due; k++) evolver.tick(changesPerTick, liveSince + k * intervalMs);
      if (due > 0) log.info({ rounds: due }, 'live: caught up with the rounds since the world began');
      const next = liveSince + (due + 1) * intervalMs;
      pendingStart = setTimeout(() => live.start(intervalMs), Math.max(0, next - now()));
      pendingStart.unref();
    } else {
      live.start(intervalMs);
    }
  }
  return {
    live,
    baseUrl: state.baseUrl,
    keys,
    world,
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
    stop() {
      live.stop();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
