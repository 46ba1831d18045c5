import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { destination, pino } from 'pino';
import { App } from './http/app.js';
import { FaultInjector } from './http/faults.js';
import type { CompanionOptions, RuntimeOptions, ServiceOptions, WorkspacesOptions } from './options.js';
import type { CompanionState } from './state.js';
import {
  apiSurfaces,
  openWorkspace,
  rateLimiterOf,
  type Workspace,
  type WorkspaceHandle,
} from './workspace.js';

export type { WorkspaceHandle } from './workspace.js';

/** A companion of one workspace: the workspace's handle, where it listens, and how to stop it. */
export interface CompanionHandle extends Omit<WorkspaceHandle, 'id'> {
  /** `http://host:port`, no trailing slash, without `/public/v1`. */
  baseUrl: string;
  stop(): Promise<void>;
}

/** A companion of many workspaces on one port. */
export interface WorkspacesHandle {
  /** `http://host:port`, no trailing slash, without `/public/v1`; the same for every workspace. */
  baseUrl: string;
  /** In the order they were given. */
  workspaces: ReadonlyMap<string, WorkspaceHandle>;
  /** The workspace of that id; throws naming the id when there is none. */
  workspace(id: string): WorkspaceHandle;
  stop(): Promise<void>;
}

/** Most workspaces one companion serves: each costs its world's memory and start-up time (bench:companion). */
export const MAX_WORKSPACES = 10_000;

interface Listening {
  baseUrl: string;
  stop(): Promise<void>;
}

async function listen(options: ServiceOptions, handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const server = createServer({ keepAlive: true }, handler);
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const listening: Listening = {
    baseUrl: `http://${host}:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return listening;
}

function serviceClock(options: ServiceOptions) {
  const clock = options.now ?? (() => new Date());
  const log = pino({ level: options.logLevel ?? 'silent', base: { svc: 'companion' } }, destination(2));
  return { now: () => clock().getTime(), log };
}

/** Serves one workspace: every request, with a key or without, goes through its pipeline. */
export async function startCompanion(options: CompanionOptions = {}): Promise<CompanionHandle> {
  const { now, log } = serviceClock(options);
  const ws = openWorkspace({ ...options, id: 'default' }, { now, log, shared: false });
  const server = await listen(options, ws.app.handle);
  ws.state.baseUrl = server.baseUrl;
  log.info({ baseUrl: server.baseUrl }, 'listening');
  ws.begin();
  const h = ws.handle;
  return {
    baseUrl: server.baseUrl,
    keys: h.keys,
    world: h.world,
    live: h.live,
    get requestLog() {
      return h.requestLog;
    },
    clearRequestLog: h.clearRequestLog,
    setOptions: h.setOptions,
    stop() {
      h.live.stop();
      return server.stop();
    },
  };
}

/**
 * The pipeline of requests no workspace's key identifies: a missing or unknown key is answered 401 (or the
 * route's 404/405) and `GET /health` answers, all rate-limited by client IP (spec 8), never faulted. Its routes
 * are mounted over the first workspace's state only to be matched: the app refuses every keyed route before
 * a handler runs, and health reads nothing of the world.
 */
function frontDoor(first: CompanionState, rateLimits: boolean): { app: App; state: CompanionState } {
  const runtime: RuntimeOptions = {
    rateLimits,
    rateLimitWindowMs: 60_000,
    rateLimitOverrides: {},
    replicaLagMs: 0,
    faults: undefined,
    messageBumpsTicketUpdatedAt: true,
    sendDelayMs: 0,
    sentAfterMs: 5_000,
    deliveredAfterMs: 30_000,
  };
  const state: CompanionState = { ...first, options: runtime, variant: 0 };
  return { app: new App(state, apiSurfaces(state), rateLimiterOf(runtime), new FaultInjector(0)), state };
}

/** The first path segment after `/uploads/` or `/files/`: the workspace whose object store is asked. */
function storageWorkspace(url: string): string | null {
  const m = /^\/(?:uploads|files)\/([^/?#]+)/.exec(url);
  return m ? (m[1] as string) : null;
}

/**
 * Serves many workspaces on one port, as a multi-tenant service does under one base URL: the API key says
 * which workspace a request is for (spec 5: every key belongs to exactly one organization), and an object-store
 * URL carries its workspace in its path. Each workspace has its own world, keys, rate-limit buckets, faults,
 * request log and live timer; nothing one does reaches another.
 */
export async function startWorkspaces(options: WorkspacesOptions): Promise<WorkspacesHandle> {
  const given = options.workspaces;
  if (given.length === 0) throw new Error('workspaces: at least one workspace is needed');
  if (given.length > MAX_WORKSPACES)
    throw new Error(`workspaces: ${given.length} given, at most ${MAX_WORKSPACES} are served`);
  const { now, log } = serviceClock(options);
  const byId = new Map<string, Workspace>();
  const byKey = new Map<string, Workspace>();
  for (const spec of given) {
    if (byId.has(spec.id)) throw new Error(`workspaces: the id "${spec.id}" is given twice`);
    const ws = openWorkspace(spec, { now, log, shared: true });
    byId.set(spec.id, ws);
    for (const key of Object.values(ws.handle.keys)) {
      const holder = byKey.get(key);
      if (holder) throw new Error(`workspaces: ${spec.id} and ${holder.handle.id} were given the same key`);
      byKey.set(key, ws);
    }
  }
  const all = [...byId.values()];
  const front = frontDoor((all[0] as Workspace).state, options.rateLimits ?? true);
  const route = (req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    const stored = storageWorkspace(url);
    if (stored !== null) {
      (byId.get(stored)?.app ?? front.app).handle(req, res);
      return;
    }
    const header = req.headers['cx-api-key'];
    const key = Array.isArray(header) ? header[0] : header;
    ((key !== undefined ? byKey.get(key)?.app : undefined) ?? front.app).handle(req, res);
  };
  const server = await listen(options, route);
  for (const state of [front.state, ...all.map((ws) => ws.state)]) state.baseUrl = server.baseUrl;
  const tickets = all.reduce((sum, ws) => sum + ws.handle.world.tickets.length, 0);
  log.info({ baseUrl: server.baseUrl, workspaces: all.length, tickets }, 'listening');
  for (const ws of all) ws.begin();
  const workspaces = new Map(all.map((ws) => [ws.handle.id, ws.handle]));
  return {
    baseUrl: server.baseUrl,
    workspaces,
    workspace(id) {
      const ws = workspaces.get(id);
      if (!ws) throw new Error(`no workspace "${id}" among the ${workspaces.size} served`);
      return ws;
    },
    stop() {
      for (const ws of all) ws.handle.live.stop();
      return server.stop();
    },
  };
}
