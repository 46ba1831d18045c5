import { planWindows } from '../connectors/support-api/index.js';
import {
  EXPORT_PASSES,
  type ExportPass,
  type StreamName,
  type SyncMode,
  type SyncSettings,
} from '../schemas/sync.js';
import type { SyncRunRecord, TableName } from '../schemas/warehouse.js';
import { laterInstant, restartedCheckpoint } from './checkpoints.js';
import type { ActivityDeps } from './deps.js';
import { TICKETS_HWM } from './tickets.js';

const HWM_SCOPE = 'hwm';

export interface RunPlan {
  /** `since`: page tickets down to this instant; null = everything (full refresh). */
  tickets: { since: string | null } | null;
  passes: {
    pass: ExportPass;
    windows: { windowStart: string; windowEnd: string }[];
    advanceHighWaterMark: boolean;
  }[];
}

/** Creates or migrates the destination's tables once per worker process. */
export function prepareDestination(deps: ActivityDeps) {
  let prepared: Promise<void> | undefined;
  return async () => {
    prepared ??= deps.destination.prepare().catch((err: unknown) => {
      prepared = undefined;
      throw err;
    });
    await prepared;
  };
}

/**
 * Decides what a run reads, from the destination's high-water marks:
 *  - incremental: from each mark minus the look-back (first run: the start date) up to `now`;
 *  - full refresh: tickets without a lower bound, exports from the start date;
 *  - backfill: the given range, without moving any mark.
 * Export ranges are cut into windows of at most `windowMs` (≤ 90 × 24 h), adjacent and gap-free.
 */
export function planRun(deps: ActivityDeps) {
  return async (input: {
    mode: SyncMode;
    streams: StreamName[];
    settings: SyncSettings;
    now: string;
    range?: { from: string; before: string };
  }): Promise<RunPlan> => {
    const { destination } = deps;
    const { settings, mode } = input;
    const lowerBound = async (stream: string): Promise<string> => {
      if (input.range) return input.range.from;
      if (mode === 'full_refresh') return settings.startDate;
      const mark = (await destination.readCheckpoint(stream, HWM_SCOPE))?.high_water_mark;
      if (!mark) return settings.startDate;
      return new Date(
        Math.max(Date.parse(mark) - settings.lookbackMs, Date.parse(settings.startDate)),
      ).toISOString();
    };

    let tickets: RunPlan['tickets'] = null;
    if (input.streams.includes('tickets')) {
      if (mode === 'full_refresh') {
        tickets = { since: null };
      } else {
        // Page down far enough to cover the thread look-back too: its threads are re-read only if the crawl
        // sees the ticket (a message need not move updated_at).
        const bound = Date.parse(await lowerBound(TICKETS_HWM.stream));
        const threadBound = input.range
          ? bound
          : Math.max(Date.parse(input.now) - settings.threadLookbackMs, Date.parse(settings.startDate));
        tickets = { since: new Date(Math.min(bound, threadBound)).toISOString() };
      }
    }
    const passes: RunPlan['passes'] = [];
    for (const stream of ['csat_surveys', 'agent_sessions'] as const) {
      if (!input.streams.includes(stream)) continue;
      for (const pass of EXPORT_PASSES[stream]) {
        const from = await lowerBound(pass);
        const to = input.range?.before ?? input.now;
        passes.push({
          pass,
          windows:
            Date.parse(from) < Date.parse(to)
              ? planWindows({ from, to, maxWindowMs: settings.windowMs })
              : [],
          advanceHighWaterMark: mode !== 'backfill' && mode !== 'replay',
        });
      }
    }
    return { tickets, passes };
  };
}

/**
 * Starts a scope: a scope that a previous run completed (a replayed window, a re-run) is read again from
 * its start; one left running by a crash resumes from its page checkpoint.
 */
export function beginScope(deps: ActivityDeps) {
  return async (input: { stream: string; scope: string }) => {
    const previous = await deps.destination.readCheckpoint(input.stream, input.scope);
    if (previous?.status !== 'complete') return { resumedAtPage: previous?.pages ?? 0 };
    await deps.destination.writeCheckpoints([
      restartedCheckpoint(input.stream, input.scope, previous.high_water_mark),
    ]);
    return { resumedAtPage: 0 };
  };
}

/** Moves a stream's high-water mark forward (never backwards). */
export function advanceHighWaterMark(deps: ActivityDeps) {
  return async (input: { stream: string; value: string }) => {
    const current = await deps.destination.readCheckpoint(input.stream, HWM_SCOPE);
    const next = laterInstant(current?.high_water_mark, input.value);
    if (next === current?.high_water_mark) return { highWaterMark: next };
    await deps.destination.writeCheckpoints([
      {
        stream: input.stream,
        scope: HWM_SCOPE,
        cursor: null,
        high_water_mark: next,
        status: 'complete',
        pages: 0,
        rows: 0,
      },
    ]);
    return { highWaterMark: next };
  };
}

/**
 * The warehouse's clock now: every row this run receives afterwards gets a later `_synced_at` (stamped by
 * the same clock), so it bounds exactly what a complete re-read did not receive.
 */
export function deletionCutoff(deps: ActivityDeps) {
  return async (): Promise<string> => (await deps.destination.currentTime()).toISOString();
}

/**
 * After a complete re-read of a table (or of the part `within` bounds: surveys sent since the start date),
 * marks the rows it did not receive as deleted. Rows are never removed.
 */
export function markUnseenDeleted(deps: ActivityDeps) {
  return async (input: { table: TableName; since: string; within?: { column: string; from: string } }) => {
    const now = deps.now?.() ?? new Date();
    const deleted = await deps.destination.markDeletedNotSeenSince(
      input.table,
      new Date(input.since),
      now,
      undefined,
      input.within ? { column: input.within.column, from: new Date(input.within.from) } : undefined,
    );
    if (deleted > 0) deps.logger.info({ table: input.table, deleted }, 'marked rows gone from the source');
    return { deleted };
  };
}

/** Upserts a run or window row in `_sync_runs`. */
export function recordRun(deps: ActivityDeps) {
  return async (run: SyncRunRecord) => {
    await deps.destination.recordRun(run);
  };
}
