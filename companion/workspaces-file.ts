import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';
import type { FaultKind } from './http/faults.js';
import { ROUTE_CLASSES } from './http/rate-limit.js';
import type { WorkspaceOptions } from './options.js';
import { WORKSPACE_ID } from './workspace.js';

/** Largest workspaces file read (a thousand workspaces with every setting fit in ~400 kB). */
const MAX_FILE_BYTES = 4 * 1024 * 1024;

const count = z.number().int().nonnegative();
const FAULT_KINDS = ['5xx', 'reset', 'slow', 'html'] as const satisfies readonly FaultKind[];

/** One workspace of `--workspaces <file>`; a setting left out takes the CLI flag of the same name. */
export const WorkspaceEntry = z
  .object({
    id: z.string().regex(WORKSPACE_ID, 'a slug: a-z, 0-9 and -, at most 63, not starting with -'),
    seed: count.optional().describe('world seed (default: --seed plus the position in the list)'),
    tickets: count.optional().describe('tickets in the workspace (default --tickets)'),
    rate_limits: z.enum(['on', 'off']).optional(),
    rate_limit_window_ms: z.number().int().positive().optional(),
    rate_limit_overrides: z.partialRecord(z.enum(ROUTE_CLASSES), count).optional(),
    replica_lag_ms: count.optional(),
    fault_rate: z.number().min(0).max(1).optional(),
    fault_kinds: z.array(z.enum(FAULT_KINDS)).min(1).optional(),
    slow_ms: count.optional(),
    message_bumps_updated_at: z.boolean().optional(),
    live: z.boolean().optional(),
    live_interval_ms: z.number().int().positive().optional(),
    live_changes: count.optional(),
    variant: count.optional(),
    id_space: count.optional().describe('ids from this space (default 0: every workspace collides)'),
  })
  .strict();
export type WorkspaceEntry = z.infer<typeof WorkspaceEntry>;

export const WorkspacesFile = z.object({ workspaces: z.array(WorkspaceEntry).min(1) }).strict();

/** The CLI's flags, which every workspace takes unless its entry says otherwise. */
export interface WorkspaceDefaults {
  seed: number;
  tickets: number;
  rateLimits: boolean;
  rateLimitWindowMs: number;
  replicaLagMs: number;
  faultRate: number;
  faultKinds: FaultKind[];
  slowMs: number;
  messageBumpsTicketUpdatedAt: boolean;
  live: boolean;
  liveIntervalMs: number;
  liveChanges: number;
  variant: number;
}

export function workspaceOptions(
  entry: WorkspaceEntry,
  position: number,
  d: WorkspaceDefaults,
): WorkspaceOptions {
  const faultRate = entry.fault_rate ?? d.faultRate;
  const live = entry.live ?? d.live;
  return {
    id: entry.id,
    seed: entry.seed ?? d.seed + position,
    tickets: entry.tickets ?? d.tickets,
    rateLimits: (entry.rate_limits ?? (d.rateLimits ? 'on' : 'off')) === 'on',
    rateLimitWindowMs: entry.rate_limit_window_ms ?? d.rateLimitWindowMs,
    ...(entry.rate_limit_overrides ? { rateLimitOverrides: entry.rate_limit_overrides } : {}),
    replicaLagMs: entry.replica_lag_ms ?? d.replicaLagMs,
    ...(faultRate > 0
      ? {
          faults: {
            rate: faultRate,
            kinds: entry.fault_kinds ?? d.faultKinds,
            slowMs: entry.slow_ms ?? d.slowMs,
          },
        }
      : {}),
    messageBumpsTicketUpdatedAt: entry.message_bumps_updated_at ?? d.messageBumpsTicketUpdatedAt,
    variant: entry.variant ?? d.variant,
    ...(entry.id_space !== undefined ? { idSpace: entry.id_space } : {}),
    ...(live
      ? {
          live: {
            intervalMs: Math.max(1, entry.live_interval_ms ?? d.liveIntervalMs),
            changesPerTick: entry.live_changes ?? d.liveChanges,
          },
        }
      : {}),
  };
}

/**
 * Reads a workspaces file (YAML, or JSON, which YAML reads too) into the options of its workspaces; every
 * error names the file and, for a bad setting, the path to it (`workspaces.3.tickets`).
 */
export function readWorkspacesFile(path: string, defaults: WorkspaceDefaults): WorkspaceOptions[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`${path}: ${(e as Error).message}`);
  }
  if (Buffer.byteLength(text) > MAX_FILE_BYTES)
    throw new Error(`${path}: larger than ${MAX_FILE_BYTES / 1024 / 1024} MB`);
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (e) {
    throw new Error(`${path}: not YAML or JSON: ${(e as Error).message}`);
  }
  const r = WorkspacesFile.safeParse(raw);
  if (!r.success) {
    const first = r.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    const more = r.error.issues.length > 5 ? ` (and ${r.error.issues.length - 5} more)` : '';
    throw new Error(`${path}: ${first.join('; ')}${more}`);
  }
  return r.data.workspaces.map((entry, i) => workspaceOptions(entry, i, defaults));
}
