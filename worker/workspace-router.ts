import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Activities } from '../activities/index.js';
import type { Config } from '../schemas/config.js';
import { Secret, type Secrets, secretsOf } from '../schemas/secret.js';
import { currentWorkspace } from './workspace-context.js';

/** What a workspace's activities run on: its API client and destination, closed when it leaves. */
export interface WorkspaceDependencies {
  activities: Activities;
  close(): Promise<void>;
}

export interface WorkspaceRouterOptions {
  /** The workspace this process was configured for, with what it built for it at start. */
  own: { workspace: string; dependencies: WorkspaceDependencies };
  /** The configuration of a workspace as its file says now (throws a ConfigError naming the problem). */
  configOf(workspace: string): Config;
  /** Builds a workspace's client, destination and activities (and puts its key under its fleet budget). */
  build(config: Config): Promise<WorkspaceDependencies>;
  /** Each workspace's secrets join the process's, so no log line shows them. */
  secrets?: Secrets;
  logger: Logger;
  /** How often a workspace's configuration is read again (an edited file takes effect within it). */
  recheckMs?: number;
  /** A workspace no activity asked for this long has its pools closed. */
  idleMs?: number;
  now?: () => number;
}

interface Slice {
  fingerprint: string;
  dependencies: Promise<WorkspaceDependencies>;
  checkedAt: number;
  usedAt: number;
}

/** An edited entry's old pools are closed this long after it, once the activities on them have finished. */
const RETIRE_AFTER_MS = 5 * 60_000;

/**
 * The activities of every workspace a worker serves, behind one set of names: each call runs on the
 * dependencies of the workspace its header names (`currentWorkspace()`), built at its first activity from
 * the workspaces file and rebuilt when its entry changes, so a workspace added, edited or removed takes
 * effect without a restart. A workspace's own problem (not in the file, its key's variable unset) fails
 * that workspace's activities with the message, retried as Temporal retries them, and no one else's.
 */
export class WorkspaceRouter {
  readonly #options: WorkspaceRouterOptions;
  readonly #slices = new Map<string, Slice>();
  readonly #recheckMs: number;
  readonly #idleMs: number;
  readonly #now: () => number;

  constructor(options: WorkspaceRouterOptions) {
    this.#options = options;
    this.#recheckMs = options.recheckMs ?? 30_000;
    this.#idleMs = options.idleMs ?? 60 * 60_000;
    this.#now = options.now ?? Date.now;
  }

  /** The activities, each dispatching to its workspace's. */
  activities(): Activities {
    const own = this.#options.own.dependencies.activities;
    return Object.fromEntries(
      Object.keys(own).map((name) => [
        name,
        async (...args: unknown[]) => {
          const { activities } = await this.dependenciesOf(currentWorkspace());
          return (activities[name as keyof Activities] as (...a: unknown[]) => unknown)(...args);
        },
      ]),
    ) as unknown as Activities;
  }

  /** The dependencies of `workspace`, built or rebuilt as its configuration says now. */
  async dependenciesOf(workspace: string): Promise<WorkspaceDependencies> {
    if (workspace === this.#options.own.workspace) return this.#options.own.dependencies;
    const now = this.#now();
    this.#closeIdle(now);
    const slice = this.#slices.get(workspace);
    if (slice && now - slice.checkedAt < this.#recheckMs) {
      slice.usedAt = now;
      return slice.dependencies;
    }
    const config = this.#options.configOf(workspace);
    const fingerprint = fingerprintOf(config);
    if (slice && slice.fingerprint === fingerprint) {
      slice.checkedAt = now;
      slice.usedAt = now;
      return slice.dependencies;
    }
    for (const secret of secretsOf(config)) this.#options.secrets?.add(secret);
    const dependencies = this.#options.build(config);
    // A build that failed (a destination that cannot be reached) is tried again by the next activity.
    dependencies.catch(() => this.#slices.delete(workspace));
    this.#slices.set(workspace, { fingerprint, dependencies, checkedAt: now, usedAt: now });
    if (slice) {
      this.#options.logger.info({ workspace }, 'workspace configuration changed: new client and destination');
      this.#retire(slice);
    } else this.#options.logger.info({ workspace }, 'workspace served');
    return dependencies;
  }

  /** The workspaces built here, for `status`-like reports and tests. */
  served(): string[] {
    return [this.#options.own.workspace, ...this.#slices.keys()];
  }

  async close(): Promise<void> {
    const slices = [...this.#slices.values()];
    this.#slices.clear();
    await Promise.allSettled(slices.map(async (s) => (await s.dependencies).close()));
  }

  #closeIdle(now: number): void {
    for (const [workspace, slice] of this.#slices) {
      if (now - slice.usedAt < this.#idleMs) continue;
      this.#slices.delete(workspace);
      this.#options.logger.info({ workspace }, 'workspace idle: its client and destination closed');
      void slice.dependencies.then((d) => d.close()).catch(() => undefined);
    }
  }

  #retire(slice: Slice): void {
    setTimeout(() => {
      void slice.dependencies.then((d) => d.close()).catch(() => undefined);
    }, RETIRE_AFTER_MS).unref();
  }
}

/** What tells one configuration of a workspace from another: every value, a secret by its hash. */
function fingerprintOf(config: Config): string {
  const values = Object.entries(config).map(([name, value]) => [
    name,
    value instanceof Secret ? createHash('sha256').update(value.reveal()).digest('hex') : value,
  ]);
  return createHash('sha256').update(JSON.stringify(values)).digest('hex');
}
