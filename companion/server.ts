import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { destination, pino } from 'pino';
import { App, type RequestLogEntry, type Surface } from './http/app.js';
import { CursorCodec } from './http/cursor.js';
import { FaultInjector } from './http/faults.js';
import { DEFAULT_LIMITS, RateLimiter, type RouteClass } from './http/rate-limit.js';
import type { CompanionOptions, RuntimeOptions } from './options.js';
import { attachmentRoutes, fileRoutes, uploadRoutes } from './routes/attachments.js';
import { directoryRoutes } from './routes/directory.js';
import { exportRoutes } from './routes/exports.js';
import { healthRoutes } from './routes/health.js';
import { legacySurface } from './routes/legacy.js';
import { messageRoutes } from './routes/messages.js';
import { reportRoutes } from './routes/reports.js';
import { ticketRoutes } from './routes/tickets.js';
import { viewRoutes } from './routes/views.js';
import type { CompanionState } from './state.js';
import { generateWorld, type KeyLabel, World } from './world/index.js';

export interface CompanionHandle {
  /** `http://host:port`, no trailing slash, without `/public/v1`. */
  baseUrl: string;
  keys: Record<KeyLabel, string>;
  world: World;
  readonly requestLog: ReadonlyArray<RequestLogEntry>;
  clearRequestLog(): void;
  setOptions(partial: Partial<RuntimeOptions>): void;
  stop(): Promise<void>;
}

export async function startCompanion(options: CompanionOptions = {}): Promise<CompanionHandle> {
  const seed = options.seed ?? 7;
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
  const data = generateWorld(seed, options.tickets ?? 300, now());
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
  };
  const v1: Surface = {
    prefix: '/public/v1',
    faults: true,
    routes: [
      ...healthRoutes(state),
      ...ticketRoutes(state),
      ...messageRoutes(state),
      ...viewRoutes(state),
      ...attachmentRoutes(state),
      ...directoryRoutes(state),
      ...reportRoutes(state),
      ...exportRoutes(state),
    ],
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
  return {
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
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
